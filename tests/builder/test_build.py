"""End-to-end build: rows equal an independent reference pipeline, hashes agree, output is deterministic."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helpers.qwen_reference import slime_qwen3_5_mask
from helpers.outputs import built as built_file
from sftpack import BuildConfig, build, permutation, read_rows
from sftpack.builder import pipeline
from sftpack.cli import main

MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"


def test_permutation_equals_datasets_shuffle():
    import datasets

    for n, seed in ((1000, 42), (17, 0), (5000, 7)):
        ds = datasets.Dataset.from_dict({"i": list(range(n))}).shuffle(seed=seed)
        assert permutation(n, seed).tolist() == ds["i"]


def make_rows(n: int, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "東京", "naïve", "😀", "x = 1", "\n", "def f():\n    pass", "Ответ", "42", "the"]
    rows = []
    for i in range(n):
        messages = []
        if rng.random() < 0.2:
            messages.append({"role": "system", "content": " ".join(rng.choices(words, k=rng.randint(1, 10)))})
        for _ in range(rng.randint(1, 3)):
            messages.append({"role": "user", "content": " ".join(rng.choices(words, k=rng.randint(1, 40)))})
            messages.append({"role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(0, 120)))})
        rows.append({"id": f"conv-{i}", "messages": messages, "source": "test"})
    rows[5]["messages"] = []  # malformed: skipped, keeps its place in the order
    rows[9]["messages"][0]["content"] = None
    return rows


@pytest.fixture(scope="module")
def source_rows():
    return make_rows(400)


@pytest.fixture(scope="module")
def source_file(tmp_path_factory, source_rows):
    path = tmp_path_factory.mktemp("src") / "tulu.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in source_rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory, source_file):
    out = tmp_path_factory.mktemp("out")
    record = build(BuildConfig(model=MODEL, source=str(source_file), rows=12, row_tokens=512, out=str(out), workers=2, progress=False))
    return out, record


def reference_rows(rows, tokenizer, n_rows, row_tokens, seed=42):
    """The build, re-done the straightforward way: transformers' Jinja template + offsets + slime's mask."""
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    stream_ids, stream_mask = [], []
    out = []
    for index in permutation(len(rows), seed):
        messages = rows[index]["messages"]
        if not messages or any(not isinstance(m.get("content"), str) for m in messages):
            continue
        ids, mask = slime_qwen3_5_mask(tokenizer, messages)
        if stream_ids or out:
            stream_ids.append(eos)
            stream_mask.append(0)
        stream_ids += ids
        stream_mask += mask
        while len(stream_ids) >= row_tokens:
            row_ids, row_mask = stream_ids[:row_tokens], stream_mask[:row_tokens]
            del stream_ids[:row_tokens], stream_mask[:row_tokens]
            row_mask[0] = 0
            if any(row_mask):
                out.append((row_ids, row_mask))
            if len(out) == n_rows:
                return out
    raise AssertionError("source too small")


def test_rows_equal_reference_pipeline(built, source_rows, qwen_hf_tokenizer):
    out, record = built
    tokens, mask = read_rows(built_file(out, ".parquet"))
    expected = reference_rows(source_rows, qwen_hf_tokenizer, 12, 512)
    assert tokens.shape == (12, 512) and mask.shape == (12, 512)
    for k, (ids, m) in enumerate(expected):
        assert tokens[k].tolist() == ids, k
        assert mask[k].tolist() == m, k
    h = hashlib.sha256()
    for ids, m in expected:
        h.update(np.asarray(ids, dtype="<i4").tobytes())
        h.update(bytes(m))
    assert record["rows_sha256"] == h.hexdigest()


def test_record_fields_and_counts(built):
    out, record = built
    on_disk = yaml.safe_load((built_file(out, ".build.yaml")).read_text())
    assert on_disk == record
    for key in ("name", "tokenizer", "loss_mask", "rows", "row_tokens", "padding_tokens", "seed", "packing",
                "supervised_token_ratio", "parquet_sha256", "parquet_bytes", "builder", "rows_sha256"):
        assert key in record, key
    assert record["rows"] == 12 and record["row_tokens"] == 512 and record["padding_tokens"] == 0 and record["seed"] == 42
    counts = record["counts"]
    tokens, mask = read_rows(built_file(out, ".parquet"))
    assert counts["supervised_tokens"] == int(mask.sum())
    assert counts["total_tokens"] == 12 * 512
    assert record["supervised_token_ratio"] == pytest.approx(mask.sum() / (12 * 512), abs=1e-6)
    assert record["parquet_bytes"] == (built_file(out, ".parquet")).stat().st_size
    assert record["parquet_sha256"] == hashlib.sha256((built_file(out, ".parquet")).read_bytes()).hexdigest()
    assert record["pinned"] is False and record["tokenizer_source"] == "offline-reconstruction"
    assert record["eos_token"] == "<|im_end|>" and record["eos_token_id"] == 248046
    # skips are counted only among the rows reached in the order
    order = permutation(400, 42).tolist()
    reached = order[: counts["source_rows_reached"]]
    assert counts["skipped"] == {
        **({"messages_empty": 1} if 5 in reached else {}),
        **({"content_not_string": 1} if 9 in reached else {}),
    }


def test_hash_command_agrees_with_record(built, capsys):
    out, record = built
    assert main(["hash", str(built_file(out, ".parquet"))]) == 0
    assert capsys.readouterr().out.split()[0] == record["rows_sha256"]


def test_parquet_layout(built):
    out, _ = built
    pf = pq.ParquetFile(built_file(out, ".parquet"))
    assert pf.schema_arrow.metadata[b"sftpack.row_tokens"] == b"512"
    table = pf.read()
    assert table.column("metadata").to_pylist()[3] == {"row": 3, "build": f"{NAME}-local-rowtokens512"}
    starts = table.column("conversation_starts").to_pylist()
    lengths = table.column("conversation_lengths").to_pylist()
    tokens, _ = read_rows(built_file(out, ".parquet"))
    for k in range(len(starts)):
        # pieces are in order, and separated by exactly one EOS token
        for (s0, l0), s1 in zip(zip(starts[k], lengths[k]), starts[k][1:]):
            assert s1 == s0 + l0 + 1 and tokens[k][s0 + l0] == 248046


def test_workers_and_reruns_are_byte_identical(tmp_path, source_file, built):
    out, record = built
    for workers in (1, 2):
        again = tmp_path / f"w{workers}"
        build(BuildConfig(model=MODEL, source=str(source_file), rows=12, row_tokens=512, out=str(again), workers=workers, progress=False))
        assert (built_file(again, ".parquet")).read_bytes() == (built_file(out, ".parquet")).read_bytes()
        assert (built_file(again, ".build.yaml")).read_bytes() == (built_file(out, ".build.yaml")).read_bytes()


@pytest.mark.parametrize("setting", ["engine thread", "steps in sequence", "SFTPACK_HUGE_PAGES=0"])
def test_the_build_settings_give_the_same_bytes(tmp_path, source_file, built, monkeypatch, setting):
    """Workers tokenize on a thread beside their Python, or in sequence, by the cores they have; the engines'
    tables in huge pages or not: the same rows."""
    asked = []
    if "=" in setting:
        monkeypatch.setenv(*setting.split("="))
    else:
        monkeypatch.setattr(pipeline, "engine_thread", lambda *cores: asked.append(cores) or setting == "engine thread")
    out, _ = built
    again = tmp_path / "again"
    build(BuildConfig(model=MODEL, source=str(source_file), rows=12, row_tokens=512, out=str(again), workers=2, progress=False))
    assert (built_file(again, ".parquet")).read_bytes() == (built_file(out, ".parquet")).read_bytes()
    assert len(asked) == ("=" not in setting)  # the build took the way the test chose


def test_source_exhausted_is_an_input_error(tmp_path, source_file, capsys):
    code = main(["build", "--model", MODEL, "--source", str(source_file), "--rows", "100000", "--row-tokens", "512",
                 "--out", str(tmp_path), "--no-progress"])
    assert code == 2
    assert "source exhausted after" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.parquet")) and not list(tmp_path.glob("*.yaml"))


def test_read_rows_slices_match_full_read(built):
    out, _ = built
    path = built_file(out, ".parquet")
    tokens, mask = read_rows(path)
    for rows in (slice(0, 3), slice(5, 12), slice(11, None), slice(4, 4)):
        t, m = read_rows(path, rows)
        assert np.array_equal(t, tokens[rows]) and np.array_equal(m, mask[rows])


def test_done_when_sample_build_64_rows(tmp_path, capsys):
    """The quickstart: 64 rows of 8,192 tokens from the bundled sample, offline; `sftpack hash` agrees with
    the record; two runs and --workers 1 vs 2 give byte-identical parquet."""
    outs = []
    for run, workers in (("a", "2"), ("b", "2"), ("c", "1")):
        out = tmp_path / run
        assert main(["build", "--model", MODEL, "--source", "sample", "--rows", "64", "--out", str(out),
                     "--workers", workers, "--no-progress"]) == 0
        outs.append(out)
    capsys.readouterr()
    tokens, mask = read_rows(built_file(outs[0], ".parquet"))
    assert tokens.shape == (64, 8192) and mask.shape == (64, 8192)
    record = yaml.safe_load((built_file(outs[0], ".build.yaml")).read_text())
    assert main(["hash", str(built_file(outs[0], ".parquet"))]) == 0
    assert capsys.readouterr().out.split()[0] == record["rows_sha256"]
    first = (built_file(outs[0], ".parquet")).read_bytes()
    assert all((built_file(o, ".parquet")).read_bytes() == first for o in outs[1:])


def test_parquet_metadata_keys(built):
    out, _ = built
    meta = pq.ParquetFile(built_file(out, ".parquet")).schema_arrow.metadata
    assert meta[b"sftpack.build"] == f"{NAME}-local-rowtokens512".encode() and meta[b"sftpack.format"] == b"2" and meta[b"sftpack.row_tokens"] == b"512"


def test_ratio_is_written_with_six_decimals(tmp_path, source_file):
    build(BuildConfig(model=MODEL, source=str(source_file), rows=1, row_tokens=4, out=str(tmp_path), workers=1, progress=False))
    text = (built_file(tmp_path, ".build.yaml")).read_text()
    [line] = [l for l in text.splitlines() if l.startswith("supervised_token_ratio:")]
    assert len(line.split(":")[1].strip().split(".")[1]) == 6


@pytest.mark.parametrize("args,needle", [
    (["--row-tokens", str(1 << 30)], "--row-tokens must be at most"),
    (["--workers", "100000"], "--workers must be at most"),
    (["--name", "a/b"], "--name"),
    (["--name", ""], "--name"),
])
def test_more_argument_errors(tmp_path, source_file, capsys, args, needle):
    code = main(["build", "--model", MODEL, "--source", str(source_file), "--out", str(tmp_path / "o"), "--no-progress", *args])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err
