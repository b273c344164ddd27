"""The smaller cases of bad input, each with its defined outcome (docs/bad-input.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from helpers.outputs import built, built_names
from sftpack.rows import read_all_provenance

MODEL = "Qwen3.5-122B-A10B"
SEED = 42


offline_vocab = offline_vocab_fixture(MODEL)


def conversation(i: int, **extra) -> dict:
    return {"id": f"c{i}", "messages": [{"role": "user", "content": f"Question {i}: what is {i} plus {i}?"},
                                        {"role": "assistant", "content": f"It is {2 * i}.", **extra}]}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def build(capsys, source, out, *extra, rows=2, row_tokens=256):
    return cli(capsys, "build", "--model", MODEL, "--source", source, "--rows", rows, "--row-tokens", row_tokens,
               "--out", out, "--workers", 1, "--no-progress", *extra)


def record_of(out: Path) -> dict:
    return yaml.safe_load(built(out, ".build.yaml").read_text(encoding="utf-8"))


def reached_in_walk(n: int, out: Path) -> np.ndarray:
    """The source rows the build reached, in its order (docs/spec.md: a numpy default_rng(seed) permutation)."""
    return np.random.default_rng(SEED).permutation(n)[: record_of(out)["counts"]["source_rows_reached"]]


@pytest.mark.parametrize("flag", ["1", 2, [1], 0.5, {"on": 1}, -1])
def test_step_loss_mask_other_values_are_a_counted_skip(flag, tmp_path, capsys):
    rows = [conversation(i, **({"step_loss_mask": flag} if i % 5 == 0 else {})) for i in range(100)]
    out = tmp_path / "out"
    rc, _, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", rows), out)
    assert rc == 0, err
    expected = sum(1 for k in reached_in_walk(100, out) if k % 5 == 0)
    assert expected >= 1 and record_of(out)["counts"]["skipped"] == {"step_loss_mask_invalid": expected}


@pytest.mark.parametrize("flag", [0, 1, True, False, None, 0.0, 1.0])
def test_step_loss_mask_accepted_values(flag, tmp_path, capsys):
    rows = [conversation(i, **({"step_loss_mask": flag} if i % 5 == 0 else {})) for i in range(100)]
    out = tmp_path / "out"
    rc, _, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", rows), out)
    assert rc == 0, err
    assert record_of(out)["counts"]["skipped"] == {}


def test_ids_integers_as_decimal_other_types_skipped(tmp_path, capsys):
    odd = {0: True, 1: 1.5, 2: ["x"], 3: {"a": 1}}  # row k % 10 == j gets odd[j]; k % 10 == 4: the integer k
    rows = []
    for k in range(200):
        row = conversation(k)
        if k % 10 in odd:
            row["id"] = odd[k % 10]
        elif k % 10 == 4:
            row["id"] = 1000 + k
        elif k % 10 == 5:
            del row["id"]
        rows.append(row)
    out = tmp_path / "out"
    rc, _, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", rows), out, rows=4)
    assert rc == 0, err
    reached = reached_in_walk(200, out)
    assert record_of(out)["counts"]["skipped"] == {"id_not_string": sum(1 for k in reached if k % 10 in odd)}
    packed = [c for p in read_all_provenance(built(out, ".parquet")) for c, o in zip(p.conversation_ids, p.offsets) if o == 0]
    expected = [str(1000 + k) if k % 10 == 4 else f"sftpack:source-row-{k}" if k % 10 == 5 else f"c{k}" for k in reached if k % 10 not in odd]
    assert packed == expected[: len(packed)] and any(k % 10 == 4 for k in reached[: len(packed) + 8])


def test_duplicate_ids_are_counted_and_inspect_counts_conversations(tmp_path, capsys):
    rows = [conversation(i) for i in range(60)]
    for i in range(0, 60, 3):
        rows[i]["id"] = "same"  # 20 conversations share one id
    out = tmp_path / "out"
    rc, _, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", rows), out, rows=3)
    assert rc == 0, err
    counts = record_of(out)["counts"]
    packed_walk = reached_in_walk(60, out)[: counts["conversations_packed"]]
    same = sum(1 for k in packed_walk if k % 3 == 0)
    assert same >= 2 and counts["duplicate_ids"] == same - 1
    rc, stdout, err = cli(capsys, "inspect", built(out, ".parquet"), "--json")
    info = json.loads(stdout)
    assert info["conversations"] == counts["conversations_packed"]
    assert info["distinct_ids"] == counts["conversations_packed"] - (same - 1)
    rc, stdout, err = cli(capsys, "inspect", built(out, ".parquet"))
    assert f"only {info['distinct_ids']} distinct ids" in stdout


def test_no_duplicates_no_key(tmp_path, capsys):
    out = tmp_path / "out"
    rc, _, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", [conversation(i) for i in range(40)]), out)
    assert rc == 0, err
    assert "duplicate_ids" not in record_of(out)["counts"]  # records of builds without them are unchanged


def test_whitespace_only_lines_are_not_rows(tmp_path, capsys):
    rows = [conversation(i) for i in range(50)]
    plain = write_jsonl(tmp_path / "plain.jsonl", rows)
    spaced = tmp_path / "spaced.jsonl"
    blanks = ["", "   ", "\t", "\r", " \t \r "]
    spaced.write_bytes(b"".join(json.dumps(r).encode() + b"\n" + blanks[i % 5].encode() + b"\n" for i, r in enumerate(rows)))
    hashes = []
    for source in (plain, spaced):
        rc, _, err = build(capsys, source, tmp_path / source.stem)
        assert rc == 0, err
        record = record_of(tmp_path / source.stem)
        assert record["dataset"]["source_rows"] == 50
        hashes.append(record["rows_sha256"])
    assert hashes[0] == hashes[1]


def test_every_row_malformed_names_the_top_reasons(tmp_path, capsys):
    rows = [{"id": f"x{i}"} for i in range(30)] + ["[1, 2]"] * 5 + ["{not json"] * 2
    out = tmp_path / "out"
    rc, stdout, err = build(capsys, write_jsonl(tmp_path / "s.jsonl", rows), out)
    assert rc == 2 and stdout == ""
    one_error_line(err, "source exhausted after 0 rows (asked for 2)", "37 of the 37 conversations reached were skipped",
                   "(messages_missing 30, row_not_object 5, invalid_json 2)")


def test_hidden_files_in_a_shard_directory_are_not_read(tmp_path, capsys):
    shards = tmp_path / "shards"
    shards.mkdir()
    rows = [conversation(i) for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows), shards / "part-0.parquet")
    (shards / ".part-0.parquet").write_bytes(b"not parquet")  # an editor's or rsync's leftover
    (shards / "._part-0.parquet").write_bytes(b"\x00\x05\x16\x07 AppleDouble")  # macOS metadata
    pq.write_table(pa.Table.from_pylist([conversation(i) for i in range(100, 110)]), shards / "_partial.parquet")
    rc, _, err = build(capsys, shards, tmp_path / "out")
    assert rc == 0, err
    rc, _, err = build(capsys, shards / "part-0.parquet", tmp_path / "one")
    assert rc == 0, err
    assert record_of(tmp_path / "out")["dataset"]["source_rows"] == 40
    assert record_of(tmp_path / "out")["rows_sha256"] == record_of(tmp_path / "one")["rows_sha256"]


def test_lock_file_is_removed_after_a_build(tmp_path, capsys):
    source = write_jsonl(tmp_path / "s.jsonl", [conversation(i) for i in range(40)])
    out = tmp_path / "out"
    rc, _, err = build(capsys, source, out)
    assert rc == 0, err
    written = sorted(os.listdir(out))
    assert written == built_names(out) and len(written) == 2
    rc, _, err = build(capsys, source, out)  # refused (exists): still nothing left behind
    assert rc == 2
    assert sorted(os.listdir(out)) == written


@pytest.mark.parametrize("name,needle", [
    ("two\nlines", "a plain file name is needed"),
    ("bell\x07", "a plain file name is needed"),
    ("x" * 240, "240 characters is too long"),
])
def test_bad_names_are_refused_as_names(name, needle, tmp_path, capsys):
    rc, _, err = build(capsys, "sample", tmp_path / "out", "--name", name)
    assert rc == 2
    line = one_error_line(err, "--name", needle)
    assert "--out" not in line and "\n" not in line.strip()
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def test_empty_out_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = build(capsys, "sample", "")
    assert rc == 2
    one_error_line(err, "--out ''", "an output directory is needed")
    assert os.listdir(tmp_path) == []


def test_another_familys_tokenizer_is_refused(tmp_path, capsys):
    from helpers.shared import shared_file
    from helpers.small_vocabs import save_gemma_test_tokenizer_dir

    shared_file("fixtures", "templates", "gemma4.jinja")
    gemma = save_gemma_test_tokenizer_dir(tmp_path / "gemma-tokenizer")
    rc, stdout, err = build(capsys, "sample", tmp_path / "out", "--tokenizer", gemma, "--allow-unpinned")
    assert rc == 2 and stdout == ""
    one_error_line(err, "no special token for <|im_end|>, <|im_start|>", "is it Qwen3.5-122B-A10B's tokenizer?")
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


def _rows_file(tmp_path: Path, capsys, edit=None) -> Path:
    out = tmp_path / "out"
    rc, _, err = build(capsys, "sample", out, rows=70, row_tokens=128)  # two row groups
    assert rc == 0, err
    path = built(out, ".parquet")
    if edit:
        table = pq.read_table(path)
        tokens = table.column("tokens").to_pylist()
        for row, position, value in edit:
            t = np.frombuffer(tokens[row], "<i4").copy()
            t[position] = value
            tokens[row] = t.tobytes()
        table = table.set_column(0, "tokens", pa.array(tokens, pa.binary())).replace_schema_metadata(table.schema.metadata)
        pq.write_table(table, path, row_group_size=64)  # row groups as sftpack writes them
    return path


def test_rollout_refuses_negative_token_ids(tmp_path, capsys):
    from sftpack.trainer.rollout import RolloutError, RowSource

    path = _rows_file(tmp_path, capsys, edit=[(66, 5, -3)])
    source = RowSource(path)
    tokens, _ = source.rows([0, 1])  # the first row group is fine
    assert tokens.shape == (2, 128)
    with pytest.raises(RolloutError, match=r"row 66 holds a negative token id \(-3\)"):
        source.rows([66])


def test_verify_compares_sha256_case_insensitively(tmp_path, capsys):
    path = _rows_file(tmp_path, capsys)
    data = yaml.safe_load(built(path.parent, ".build.yaml").read_text())
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"workload": {"dataset": {
        "rows_sha256": data["rows_sha256"].upper(),
        "build": {"name": data["name"], "rows": 70, "row_tokens": 128, "parquet_sha256": data["parquet_sha256"].upper(),
                  "supervised_token_ratio": round(data["supervised_token_ratio"], 3)}}}}))
    rc, stdout, err = cli(capsys, "verify", recipe, "--rows", path)
    assert rc == 0, stdout + err
    assert "compared at the declared 3 decimals" in stdout
    assert "VERIFIED" in stdout


def _colliding_rows() -> list[dict]:
    """Rows 3 and 6 have no id (null, absent); row 1's real id is the old generated form of row 3's, row 8's is
    the current generated form of row 3's (reserved: skipped)."""
    rows = [conversation(k) for k in range(12)]
    rows[1]["id"] = "row-3"
    rows[3]["id"] = None
    del rows[6]["id"]
    rows[8]["id"] = "sftpack:source-row-3"
    return rows


def _write_source(tmp_path: Path, fmt: str, rows: list[dict]) -> Path:
    if fmt == "jsonl":
        return write_jsonl(tmp_path / "s.jsonl", rows)
    if fmt == "json":
        (tmp_path / "s.json").write_text(json.dumps(rows), encoding="utf-8")
        return tmp_path / "s.json"
    messages = pa.array([r["messages"] for r in rows])
    if fmt == "parquet-no-id-column":  # the zero-copy reader, every id generated
        table = pa.table({"messages": messages})
    elif fmt == "parquet-null-ids":  # a chunk with null ids goes through pyarrow's own conversion
        table = pa.table({"id": pa.array([r.get("id") for r in rows], pa.string()), "messages": messages})
    else:  # "parquet": no nulls, the zero-copy reader
        table = pa.table({"id": pa.array([r.get("id") or f"filled-{k}" for k, r in enumerate(rows)]), "messages": messages})
    pq.write_table(table, tmp_path / "s.parquet")
    return tmp_path / "s.parquet"


@pytest.mark.parametrize("fmt", ["jsonl", "json", "parquet", "parquet-null-ids", "parquet-no-id-column"])
def test_generated_ids_cannot_collide_with_real_ids(fmt, tmp_path, capsys):
    rows = _colliding_rows()
    source = _write_source(tmp_path, fmt, rows)
    out = tmp_path / "out"
    rc, _, err = build(capsys, source, out, rows="all", row_tokens=64)
    assert rc == 0, err
    counts = record_of(out)["counts"]
    packed = [c for p in read_all_provenance(built(out, ".parquet")) for c, o in zip(p.conversation_ids, p.offsets) if o == 0]
    walk = reached_in_walk(12, out)
    assert len(walk) == 12  # --rows all reaches every row (a conversation only in the dropped tail is not packed)
    if fmt == "parquet-no-id-column":
        ids = {k: f"sftpack:source-row-{k}" for k in range(12)}
        assert counts["skipped"] == {}
    else:
        ids = {1: "row-3", 3: "sftpack:source-row-3", 6: "sftpack:source-row-6", 8: None}
        if fmt == "parquet":
            ids.update({3: "filled-3", 6: "filled-6"})
        assert counts["skipped"] == {"id_reserved": 1}
    expected = [ids.get(k, f"c{k}") for k in walk if ids.get(k, "") is not None]
    assert packed == expected[: len(packed)] and len(packed) >= 9  # (the partial last row's conversations: dropped)
    assert len(set(packed)) == len(packed) and "duplicate_ids" not in counts, counts
    rc, _, err = build(capsys, source, tmp_path / "strict", "--strict", rows="all", row_tokens=64)
    if fmt == "parquet-no-id-column":
        assert rc == 0, err
    else:
        assert rc == 2
        one_error_line(err, "--strict", "id_reserved", "'sftpack:source-row-3'", "starts with 'sftpack:'")
        assert not built_names(tmp_path / "strict")
