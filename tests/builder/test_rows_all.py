"""``--rows all``: every full row until the source ends, the partial last row dropped, counts that add up.

The expected stream is rebuilt here independently: each kept conversation encoded alone (the one-text path,
not the batched one), joined with one EOS between consecutive conversations, cut by hand.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import yaml

from sftpack import BuildConfig, build, permutation, read_rows
from sftpack.families.conversation import Skip
from sftpack.families.encode import make_encoder
from sftpack.sources import open_source
from sftpack.sources.base import RowError
from sftpack.cli import main
from sftpack.families.profiles import load_profile
from helpers.outputs import built, built_names

MODEL = "Qwen3.5-122B-A10B"


def expected_stream(source, encoder, seed: int = 42):
    """(tokens, mask, kept ids) of the whole packing stream, conversation by conversation."""
    tokens, masks, kept = [], [], []
    eos = encoder.vocab.eos_id
    for index in permutation(len(source), seed).tolist():
        (item,) = source.take([index])
        if isinstance(item, RowError):
            continue
        conv_id, messages = item
        try:
            ids, mask = encoder(messages)
        except Skip:
            continue
        if kept:
            tokens.append(np.array([eos], np.int32))
            masks.append(np.zeros(1, np.uint8))
        tokens.append(ids)
        masks.append(mask)
        kept.append(conv_id)
    return np.concatenate(tokens), np.concatenate(masks), kept


def cut(tokens, mask, row_tokens):
    """Full rows of the stream, position 0 unsupervised, rows without targets dropped; and the dropped count."""
    n = len(tokens) // row_tokens
    t = tokens[: n * row_tokens].reshape(n, row_tokens)
    m = mask[: n * row_tokens].reshape(n, row_tokens).copy()
    m[:, 0] = 0
    keep = m.any(axis=1)
    return t[keep], m[keep], int((~keep).sum())


@pytest.fixture(scope="module")
def encoder(offline_qwen):
    return make_encoder(load_profile(MODEL), offline_qwen)


@pytest.fixture(autouse=True)
def loaded_once(monkeypatch, offline_qwen):
    # every build here would load the same offline vocabulary (~2 s each on a small machine)
    import sftpack.builder.pipeline

    monkeypatch.setattr(sftpack.builder.pipeline, "load_vocab", lambda *a, **k: offline_qwen)  # CLI builds too


def test_rows_all_on_the_sample_counts_add_up(tmp_path, encoder):
    record = build(BuildConfig(model=MODEL, source="sample", rows="all", out=str(tmp_path), workers=2, progress=False))
    tokens, mask, kept = expected_stream(open_source("sample"), encoder)
    row_tokens = record["row_tokens"]
    counts = record["counts"]
    eos_tokens = len(kept) - 1
    conversation_tokens = len(tokens) - eos_tokens
    # the counts' identity, with the rows dropped for having no target (the sample has a few) on the left
    assert (record["rows"] + counts["rows_dropped_without_targets"]) * row_tokens + counts["tail_tokens_dropped"] \
        == conversation_tokens + eos_tokens
    assert counts["conversations_packed"] == len(kept) and counts["source_rows_reached"] == 3000
    want_t, want_m, dropped = cut(tokens, mask, row_tokens)
    assert counts["rows_dropped_without_targets"] == dropped
    assert counts["tail_tokens_dropped"] == len(tokens) % row_tokens and 0 < counts["tail_tokens_dropped"] < row_tokens
    got_t, got_m = read_rows(built(tmp_path, ".parquet"))
    assert record["rows"] == len(got_t) == len(want_t) > 0
    assert np.array_equal(got_t, want_t) and np.array_equal(got_m, want_m)
    assert counts["total_tokens"] == record["rows"] * row_tokens
    assert counts["supervised_tokens"] == int(want_m.sum())
    assert record["rows_sha256"] == hashlib.sha256(
        b"".join(t.astype("<i4").tobytes() + m.tobytes() for t, m in zip(want_t, want_m))).hexdigest()
    assert "--rows all" in record["packing"]
    # the record of a --rows all build verifies like any other (its rows: the count the source gave)
    assert main(["verify", str(built(tmp_path, ".build.yaml")), "--rows", str(built(tmp_path, ".parquet"))]) == 0


def small_source(tmp_path, n=240):
    rows = open_source("sample").take(np.arange(n))
    path = tmp_path / "small.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for conv_id, messages in rows:
            f.write(json.dumps({"id": conv_id, "messages": messages, "source": "t"}, ensure_ascii=False) + "\n")
        f.write("not json\n")  # a malformed row keeps its place and is counted
    return path


def test_rows_all_identical_for_any_workers_and_equal_to_rows_n(tmp_path, encoder):
    source = small_source(tmp_path)
    outputs = []
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        record = build(BuildConfig(model=MODEL, source=str(source), rows="all", row_tokens=700, out=str(out),
                                   workers=workers, progress=False))
        outputs.append(((built(out, ".parquet")).read_bytes(), (built(out, ".build.yaml")).read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]
    record = yaml.safe_load(outputs[0][1])
    assert record["counts"]["skipped"] == {"invalid_json": 1}
    assert record["counts"]["source_rows_reached"] == 241
    tokens, mask, kept = expected_stream(open_source(str(source)), encoder)
    want_t, _, dropped = cut(tokens, mask, 700)
    assert record["rows"] == len(want_t) and record["counts"]["conversations_packed"] == len(kept)
    # --rows N keeps its meaning: N = the rows --rows all gave is the same rows; one more is an error
    exact = build(BuildConfig(model=MODEL, source=str(source), rows=record["rows"], row_tokens=700,
                              out=str(tmp_path / "n"), workers=2, progress=False))
    assert exact["rows_sha256"] == record["rows_sha256"] and "tail_tokens_dropped" not in exact["counts"]
    code = main(["build", "--model", MODEL, "--source", str(source), "--rows", str(record["rows"] + 1),
                 "--row-tokens", "700", "--out", str(tmp_path / "n1"), "--no-progress"])
    assert code == 2 and not built_names(tmp_path / "n1")


def test_rows_all_cli_and_bad_values(tmp_path, capsys):
    source = small_source(tmp_path, n=3)
    code = main(["build", "--model", MODEL, "--source", str(source), "--rows", "all", "--row-tokens", "64",
                 "--out", str(tmp_path / "a"), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "--rows all" in out and "tokens of the partial last row dropped" in out
    # fewer tokens than one row: one line, exit 2, no output
    code = main(["build", "--model", MODEL, "--source", str(source), "--rows", "all", "--row-tokens", "100000",
                 "--out", str(tmp_path / "b"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "--rows all: the source holds no full row" in err and len(err.strip().splitlines()) == 1
    assert not built_names(tmp_path / "b")
    for bad in ("some", "1.5", ""):
        with pytest.raises(SystemExit) as e:
            main(["build", "--model", MODEL, "--source", "sample", "--rows", bad, "--out", str(tmp_path / "c")])
        assert e.value.code == 2
    with pytest.raises(Exception, match="rows must be a whole number or 'all'"):
        BuildConfig(model=MODEL, source="sample", rows="every", out=str(tmp_path / "d"), progress=False)


def test_progress_shows_the_fraction_of_the_source(tmp_path, capsys, monkeypatch):
    import sftpack.builder.pipeline

    source = small_source(tmp_path, n=60)
    monkeypatch.setattr(sftpack.builder.pipeline.time, "monotonic", iter(range(0, 10_000, 1)).__next__)  # 1 s per call
    build(BuildConfig(model=MODEL, source=str(source), rows="all", row_tokens=256, out=str(tmp_path / "a"), workers=1))
    err = capsys.readouterr().err
    assert "61/61" in err and "100%" in err and "conv/s" in err  # every source row reached, malformed one included
    assert "Mtok/s" in err and " rows, " in err  # rows written and tokens per second beside the bar
    build(BuildConfig(model=MODEL, source=str(source), rows=3, row_tokens=256, out=str(tmp_path / "b"), workers=1))
    err = capsys.readouterr().err
    assert "3/3" in err and "row/s" in err and " conv, " in err
