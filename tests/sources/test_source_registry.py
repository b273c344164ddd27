"""A new source reader is one class and one registry line (docs/architecture.md, "Adding a source reader"): a toy
CSV reader is registered here, a build reads through it from the command line and from Python, and its rows equal
the rows built from the same conversations written as JSONL (sftpack's own reader: an independent path). An
unknown kind and a duplicate registration are one line each."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import sftpack
from sftpack.base.errors import UsageError
from sftpack.builder.config import BuildConfig
from sftpack.cli import main
from sftpack.sources import (SOURCE_READERS, ListSource, Source, SourceReader, SourceRequest, open_source,
                             register_source_reader, source_from_rows)

MODEL = "Qwen3.5-122B-A10B"
CONVERSATIONS = [(f"c{i}", f"What is {i} + {i}?", f"{i} + {i} = {2 * i}.") for i in range(60)]


class CsvReader(SourceReader):
    """``id,question,answer`` rows: one user and one assistant message each."""

    def open(self, request: SourceRequest) -> Source:
        with open(request.path, newline="", encoding="utf-8") as f:
            rows = [{"id": row["id"], "messages": [{"role": "user", "content": row["question"]},
                                                   {"role": "assistant", "content": row["answer"]}]}
                    for row in csv.DictReader(f)]
        return ListSource(rows, request.info(request.path.name, "file"))


class Greetings(SourceReader):
    """A word ``--source`` takes as it is: two conversations made in memory."""

    def open(self, request: SourceRequest) -> Source:
        return source_from_rows([{"id": "g1", "messages": [{"role": "user", "content": "Hi"},
                                                           {"role": "assistant", "content": "Hello!"}]}] * 2, "greetings")


@pytest.fixture
def toy_readers():
    register_source_reader(".csv", CsvReader)
    register_source_reader("greetings", Greetings)
    yield
    del SOURCE_READERS[".csv"], SOURCE_READERS["greetings"]


def write_csv(path):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "question", "answer"])
        writer.writerows(CONVERSATIONS)


def write_jsonl(path):
    path.write_text("".join(json.dumps({"id": i, "messages": [{"role": "user", "content": q},
                                                               {"role": "assistant", "content": a}]}) + "\n"
                            for i, q, a in CONVERSATIONS), encoding="utf-8")


def test_a_registered_toy_reader_builds(toy_readers, tmp_path, offline_qwen, capsys, monkeypatch):
    write_csv(tmp_path / "conversations.csv")
    write_jsonl(tmp_path / "conversations.jsonl")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["build", "--model", MODEL, "--source", str(tmp_path / "conversations.csv"), "--rows", "3",
                 "--row-tokens", "128", "--out", str(tmp_path / "csv"), "--name", "toy", "--workers", "1",
                 "--no-progress"]) == 0
    capsys.readouterr()
    jsonl = sftpack.build(BuildConfig(model=MODEL, source=str(tmp_path / "conversations.jsonl"), rows=3,
                                      row_tokens=128, out=str(tmp_path / "jsonl"), name="toy", workers=1,
                                      progress=False), vocab=offline_qwen)
    tokens, mask = sftpack.read_rows(tmp_path / "csv" / "toy.parquet")
    expected_tokens, expected_mask = sftpack.read_rows(jsonl.paths.parquet)
    assert tokens.shape == (3, 128) and mask.sum() > 0
    assert np.array_equal(tokens, expected_tokens) and np.array_equal(mask, expected_mask)
    # the CSV's text is what was packed: every supervised span decodes to one of its answers and the turn's end
    text = offline_qwen.decode(tokens[0][mask[0].astype(bool)].tolist())
    assert any(answer in text for _, _, answer in CONVERSATIONS) and "<|im_end|>" in text
    record = (tmp_path / "csv" / "toy.build.yaml").read_text(encoding="utf-8")
    assert "name: conversations.csv" in record and f"source_rows: {len(CONVERSATIONS)}" in record


def test_a_registered_word_opens_as_it_is(toy_readers):
    source = open_source("greetings")
    assert len(source) == 2 and source.take([1]) == [("g1", [{"role": "user", "content": "Hi"},
                                                             {"role": "assistant", "content": "Hello!"}])]


def test_an_unknown_kind_names_the_known_ones(tmp_path, capsys, monkeypatch):
    path = tmp_path / "table.csv"
    path.write_text("id,question,answer\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"^--source .*table\.csv: unknown source kind '\.csv'; known: \.arrow, "
                                         r"\.json, \.jsonl, \.parquet, hub, hub-dataset, parquet-shards, sample, "
                                         r"save_to_disk$"):
        open_source(str(path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["build", "--model", MODEL, "--source", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown source kind '.csv'" in err[0]
    assert not list((tmp_path / "out").glob("*.parquet*")) and not list((tmp_path / "out").glob("*.build.yaml*"))


def test_a_duplicate_kind_is_refused(toy_readers):
    with pytest.raises(ValueError, match=r"^Duplicate source kind '\.jsonl'$"):
        register_source_reader(".jsonl", CsvReader)
    with pytest.raises(ValueError, match=r"^Duplicate source kind '\.csv'$"):
        register_source_reader(".csv", CsvReader)
    with pytest.raises(TypeError, match="not a SourceReader class"):
        register_source_reader(".tsv", CsvReader())
