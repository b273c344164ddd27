"""The rollout raises its own error (``RolloutError``), one printable line, for whatever a trainer hands it: row
metadata out of any integer range, prompts naming rows with thousands of digits, ``--prompt-data`` that is not a
path string, a rows file with duplicated columns, and text holding terminal escapes."""

from __future__ import annotations

import re
import types

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers.cli_outcomes import offline_vocab_fixture
from sftpack.trainer.rollout import RolloutError, generate_rollout

MODEL = "Qwen3.5-122B-A10B"
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

offline_vocab = offline_vocab_fixture(MODEL)


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory):
    from sftpack.cli import main

    out = tmp_path_factory.mktemp("rollout")
    assert main(["build", "--model", MODEL, "--source", "sample", "--rows", "8", "--row-tokens", "64", "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 0
    return next(out.glob("*.parquet"))


class Buffer:
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return 8

    def get_samples(self, n):
        return [[s] for s in self.samples[:n]]


def _sample(row, prompt=None, build=None, **metadata):
    metadata = {"row": row, **({"build": build} if build is not None else {}), **metadata}
    return types.SimpleNamespace(prompt=prompt if prompt is not None else [{"role": "user", "content": f"sftpack row {row}"}],
                                 metadata=metadata, tokens=None)


def _args(prompt_data, batch=1):
    return types.SimpleNamespace(prompt_data=prompt_data, rollout_batch_size=batch, rollout_global_dataset=True,
                                 rollout_max_context_len=None)


def _refused(args, samples) -> str:
    with pytest.raises(RolloutError) as caught:
        generate_rollout(args, 0, Buffer(samples))
    message = str(caught.value)
    assert "\n" not in message and not CONTROL.search(message), repr(message)
    return message


@pytest.mark.parametrize("row", [2**70, -(2**70), 10**30, 2**63, -1, 8, np.uint64(2**64 - 1), np.int64(-(2**63))])
def test_row_metadata_out_of_range(row, rows_file):
    message = _refused(_args(str(rows_file)), [_sample(row)])
    assert "row" in message


@pytest.mark.parametrize("digits", [30, 5000, 50_000])
def test_prompt_naming_a_row_with_many_digits(digits, rows_file):
    prompt = [{"role": "user", "content": "sftpack row " + "9" * digits}]
    message = _refused(_args(str(rows_file)), [_sample(0, prompt=prompt)])
    assert "names another row" in message or "row" in message
    _refused(_args(str(rows_file)), [_sample(0, prompt="sftpack row " + "7" * digits)])


@pytest.mark.parametrize("prompt_data", [["a.parquet"], ("a.parquet",), 7, b"rows.parquet", {"path": "x"}])
def test_prompt_data_not_a_string(prompt_data, rows_file):
    message = _refused(_args(prompt_data), [_sample(0)])
    assert "--prompt-data" in message


def test_duplicate_columns(rows_file, tmp_path):
    table = pq.read_table(rows_file)
    bad = tmp_path / "dup.parquet"
    pq.write_table(table.append_column("metadata", table.column("metadata")).replace_schema_metadata(table.schema.metadata), bad)
    message = _refused(_args(str(bad)), [_sample(0)])
    assert str(bad) in message and "metadata" in message


def test_escapes_are_escaped(rows_file, tmp_path):
    _refused(_args(str(rows_file)), [_sample(0, build="\x1b[31mred\x1b[0m\r\n")])
    _refused(_args(str(rows_file)), [_sample("\x1b]0;title\x07")])
    _refused(_args(str(rows_file)), [_sample(None, prompt=[{"role": "user", "content": "\x1b[2J\rsftpack row 1"}])])
    escaped = tmp_path / "a\x1b[31mb.parquet"
    escaped.write_bytes(rows_file.read_bytes()[:100])  # not a parquet file: the error names the path
    _refused(_args(str(escaped)), [_sample(0)])


def test_good_rows_still_feed(rows_file):
    samples = [_sample(k) for k in range(8)]
    generate_rollout(_args(str(rows_file), batch=8), 0, Buffer(samples))
    assert all(len(s.tokens) == 64 for s in samples)
