"""Rows-file format versions: format 2 writes ``messages`` as a one-message chat (what slime and miles require
when ``--hf-checkpoint`` ships a processor); format-1 files (a string ``messages``) still hash, verify, inspect
and feed the rollout; a file claiming a newer format is refused with one line."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers.rows_fixtures import NAME, ROWS, build_small, offline, rewrite_as
from helpers.trainer_double import DataBuffer, Processor, slime_args, trainer_dataset
from sftpack import hash_rows, read_rows
from sftpack.cli import main
from sftpack.trainer.rollout import RolloutError, generate_rollout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    with offline():
        return build_small(tmp_path_factory.mktemp("format"))


def test_messages_is_a_chat_naming_the_row(built):
    _, rows, _ = built
    pf = pq.ParquetFile(rows)
    assert pf.schema_arrow.metadata[b"sftpack.format"] == b"2"
    assert pf.schema_arrow.field("messages").type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    values = pf.read(columns=["messages", "metadata"]).to_pylist()
    assert [v["messages"] for v in values] == [[{"role": "user", "content": f"sftpack row {k}"}] for k in range(ROWS)]
    assert [v["metadata"] for v in values] == [{"row": k, "build": NAME} for k in range(ROWS)]


def test_the_trainer_double_refuses_a_string_prompt_with_a_processor(built, tmp_path):
    _, rows, _ = built
    old = tmp_path / "old.parquet"
    rewrite_as(rows, old, "1", string_messages=True)
    with pytest.raises(AssertionError, match="prompt must be a list when processor is not None, got <class 'str'>"):
        trainer_dataset(str(old), processor=Processor())
    assert len(trainer_dataset(str(old))) == ROWS  # a tokenizer-only checkpoint accepts it
    samples = trainer_dataset(str(rows), processor=Processor())  # format 2 passes with the processor
    assert [s.prompt for s in samples] == [[{"role": "user", "content": f"sftpack row {k}"}] for k in range(ROWS)]


def test_format_1_files_hash_verify_inspect_and_feed_the_rollout(built, tmp_path, capsys):
    _, rows, record = built
    d = tmp_path / "old"
    d.mkdir()
    old = d / f"{NAME}.parquet"
    rewrite_as(rows, old, "1", string_messages=True)
    declared = yaml.safe_load(record.read_text())
    declared["parquet_sha256"] = hashlib.sha256(old.read_bytes()).hexdigest()
    declared["parquet_bytes"] = old.stat().st_size
    (d / f"{NAME}.build.yaml").write_text(yaml.safe_dump(declared, sort_keys=False))

    assert hash_rows(old)["rows_sha256"] == declared["rows_sha256"]
    assert main(["hash", str(old)]) == 0
    assert declared["rows_sha256"] in capsys.readouterr().out
    assert main(["verify", str(d / f"{NAME}.build.yaml"), "--rows", str(old)]) == 0
    capsys.readouterr()
    with offline():
        assert main(["inspect", str(old), "--row", "1"]) == 0
        assert main(["inspect", str(old)]) == 0
    capsys.readouterr()
    tokens, mask = read_rows(old)
    groups = generate_rollout(slime_args(str(old), batch=ROWS), 0, DataBuffer(trainer_dataset(str(old))))
    assert [s.tokens for (s,) in groups] == tokens.tolist()
    assert [s.prompt for (s,) in groups] == [f"sftpack row {k}" for k in range(ROWS)]


@pytest.mark.parametrize("fmt", ["3", "999", "2.1", "x\x1b[2J"])
def test_a_newer_or_unknown_format_is_refused_with_one_line(built, tmp_path, capsys, fmt):
    _, rows, _ = built
    new = tmp_path / "new.parquet"
    rewrite_as(rows, new, fmt, string_messages=False)
    for argv in (["hash", str(new)], ["inspect", str(new)], ["inspect", str(new), "--row", "0"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.isprintable() is False  # one line (its newline)
        line = err.rstrip("\n")
        assert line.isprintable() and "rows format" in line and "upgrade sftpack" in line and str(new) in line
    with pytest.raises(Exception, match="rows format .* upgrade sftpack"):
        read_rows(new)
    with pytest.raises(RolloutError, match="rows format .* upgrade sftpack"):
        generate_rollout(slime_args(str(new), batch=1), 0, DataBuffer(trainer_dataset(str(new))))


def test_a_file_smaller_than_one_rollout_batch_is_refused_on_the_first_call(built):
    _, rows, _ = built
    buffer = DataBuffer(trainer_dataset(str(rows)))
    with pytest.raises(RolloutError) as e:
        generate_rollout(slime_args(str(rows), batch=ROWS + 1), 0, buffer)
    message = str(e.value)
    assert str(rows) in message and f"holds {ROWS} rows" in message and f"--rollout-batch-size is {ROWS + 1}" in message
    assert buffer.offset == 0  # refused before any sample was taken
    # A sliced --prompt-data counts the rows of its slice (no data-source length known).
    with pytest.raises(RolloutError, match=r"holds 2 rows but --rollout-batch-size is 3"):
        generate_rollout(slime_args(f"{rows}@[4:]", batch=3), 0, object.__new__(type("B", (), {"get_samples": None})))
    groups = generate_rollout(slime_args(str(rows), batch=ROWS), 0, buffer)
    assert len(groups) == ROWS


@pytest.mark.parametrize("batch", [0, -1, None, "8", True])
def test_a_missing_or_bad_rollout_batch_size_is_refused(built, batch):
    _, rows, _ = built
    with pytest.raises(RolloutError, match="rollout-batch-size"):
        generate_rollout(slime_args(str(rows), batch=batch), 0, DataBuffer(trainer_dataset(str(rows))))
