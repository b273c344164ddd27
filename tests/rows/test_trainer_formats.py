"""The TRL and Megatron-Bridge rows formats hold the parquet build's rows exactly: ``build --format`` and
``convert`` write the same bytes, and ``hash``, ``verify``, ``inspect`` and ``diff`` work on each; the trainers'
columns are what their readers expect. (TRL's trainer and Megatron-Bridge's dataset reading these files:
``test_trl_trainer.py``, ``test_megatron_bridge_dataset.py``.)"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sftpack
from helpers.trainer_rows import build_rows, documents
from sftpack.base.errors import UsageError
from sftpack.cli import main
from sftpack.rows.formats import new_row_writer, open_rows_file
from sftpack.rows.model import NotSftpackRows, Piece, Row

FORMATS = {"trl": ".trl.parquet", "megatron-bridge": ".idx.parquet"}


@pytest.fixture(scope="module")
def parquet_build(tmp_path_factory, offline_qwen):
    """The parquet build every format is compared with: ``(rows file, build record)``."""
    return build_rows(tmp_path_factory.mktemp("parquet"), offline_qwen)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_build_in_the_format_holds_the_parquet_rows(fmt, parquet_build, tmp_path, offline_qwen, capsys):
    parquet, parquet_record = parquet_build
    path, record = build_rows(tmp_path, offline_qwen, fmt=fmt)
    assert path.name.endswith(FORMATS[fmt])
    tokens, mask = sftpack.read_rows(parquet)
    reader = open_rows_file(path)
    assert np.array_equal(reader.read()[0], tokens) and np.array_equal(reader.read()[1], mask)
    assert [p.pieces() for p in reader.all_provenance()] == [p.pieces() for p in sftpack.rows.read_all_provenance(parquet)]

    assert main(["hash", str(path)]) == 0
    assert capsys.readouterr().out.split()[0] == sftpack.rows.hash_rows(parquet)["rows_sha256"]
    # the record names the file's format, so its parquet_sha256 is compared; --rebuild builds in that format
    assert f"\nrows_format: {fmt}\n" in record.read_text() and "rows_format" not in parquet_record.read_text()
    assert main(["verify", str(record), "--rows", str(path)]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "not compared" not in out
    boundary = {"trl": "seq_lengths", "megatron-bridge": "seq_start_id"}[fmt]  # what the trainer reads as documents
    assert re.search(rf"\n  boundaries .*✓ OK .*{boundary} checked in every row", out), out
    assert main(["verify", str(record), "--rebuild", "--source", str(tmp_path / "convs.jsonl"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "not compared" not in out
    assert main(["inspect", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == len(tokens) and summary["supervised_tokens"] == int(mask.sum())
    assert main(["diff", str(parquet), str(path)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("fmt", FORMATS)
def test_convert_writes_what_build_writes(fmt, parquet_build, tmp_path, offline_qwen, capsys):
    parquet, parquet_record = parquet_build
    built, _ = build_rows(tmp_path / "built", offline_qwen, fmt=fmt)
    assert main(["convert", str(parquet), "--to", fmt, str(tmp_path / "converted")]) == 0
    capsys.readouterr()
    converted = tmp_path / "converted" / built.name
    assert converted.read_bytes() == built.read_bytes()
    # the record beside the converted file, its own, describes it, and verifies
    record = tmp_path / "converted" / parquet_record.name.replace(".build.yaml", FORMATS[fmt].replace(".parquet", ".build.yaml"))
    assert main(["verify", str(record), "--rows", str(converted)]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    # the source's record (or a recipe's) declares the parquet file's bytes: shown, not compared; the rows verify
    assert main(["verify", str(parquet_record), "--rows", str(converted)]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "not compared: the declared file is another rows format's" in out
    assert main(["hash", str(converted)]) == 0
    assert capsys.readouterr().out.split()[0] == sftpack.rows.hash_rows(parquet)["rows_sha256"]
    # and back: the parquet file and its build record, byte for byte (rows, provenance and counts all carried over)
    assert main(["convert", str(converted), "--to", "parquet", str(tmp_path / "back")]) == 0
    assert (tmp_path / "back" / parquet.name).read_bytes() == parquet.read_bytes()
    assert (tmp_path / "back" / parquet_record.name).read_bytes() == parquet_record.read_bytes()


def test_the_trl_file_is_what_load_dataset_reads(parquet_build, tmp_path):
    datasets = pytest.importorskip("datasets")
    parquet, _ = parquet_build
    assert main(["convert", str(parquet), "--to", "trl", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.trl.parquet")
    dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
    tokens, mask = sftpack.read_rows(parquet)
    provenance = sftpack.rows.read_all_provenance(parquet)
    for row in range(len(tokens)):
        example = dataset[row]
        assert example["input_ids"] == tokens[row].tolist()
        assert example["assistant_masks"] == mask[row].tolist()
        assert example["seq_lengths"] == [end - start for start, end in documents(provenance[row])]


def test_the_megatron_bridge_columns_have_its_packed_parquet_types(parquet_build, tmp_path):
    parquet, _ = parquet_build
    assert main(["convert", str(parquet), "--to", "megatron-bridge", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.idx.parquet")
    schema = pq.read_schema(path)
    # as Megatron-Bridge's own write_packed_parquet writes them
    assert schema.field("input_ids").type == pa.list_(pa.int32())
    assert schema.field("loss_mask").type == pa.list_(pa.int8())
    assert schema.field("seq_start_id").type == pa.list_(pa.int32())
    provenance = sftpack.rows.read_all_provenance(parquet)
    starts = pq.read_table(path, columns=["seq_start_id"]).column("seq_start_id").to_pylist()
    assert starts == [[start for start, _ in documents(p)] for p in provenance]


def test_megatron_bridge_refuses_a_row_whose_document_starts_on_a_target(tmp_path, capsys):
    tokens = np.arange(8, dtype=np.int32)
    mask = np.array([0, 0, 1, 1, 1, 0, 1, 0], np.uint8)  # position 4 starts the second conversation
    pieces = [Piece("a", 0, 3, 0), Piece("b", 4, 4, 0)]
    writer = new_row_writer("megatron-bridge", tmp_path / "x.idx.parquet", 8, "x")
    writer.write(Row(tokens, mask, pieces))
    with pytest.raises(UsageError, match=r"^row 0: the token at 4 starts a document and is a target; the "
                                         r"Megatron-Bridge layout cannot hold it$"):
        writer.close()
    # the same rows as a parquet file, converted: one line, exit 2, nothing written
    parquet = new_row_writer("parquet", tmp_path / "rows.parquet", 8, "rows")
    parquet.write(Row(tokens, mask, pieces))
    parquet.close()
    assert main(["convert", str(tmp_path / "rows.parquet"), "--to", "megatron-bridge", str(tmp_path / "mb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / 'rows.parquet'}: row 0: the token at 4 starts a document" in err
    assert not (tmp_path / "mb").exists()  # the --out it created is removed with what it wrote


def test_convert_needs_the_provenance_columns(parquet_build, tmp_path, capsys):
    parquet, _ = parquet_build
    table = pq.read_table(parquet)
    bare = tmp_path / "bare.parquet"
    pq.write_table(table.drop_columns(["conversation_ids", "conversation_starts", "conversation_lengths",
                                       "conversation_offsets"]), bare)
    assert main(["convert", str(bare), "--to", "trl", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "where each conversation starts is unknown" in err


@pytest.mark.parametrize("fmt, column, value", [("trl", "seq_lengths", [5]), ("megatron-bridge", "seq_start_id", [3])])
def test_boundaries_that_do_not_fit_the_row_are_one_line(fmt, column, value, parquet_build, tmp_path):
    parquet, _ = parquet_build
    assert main(["convert", str(parquet), "--to", fmt, str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*" + FORMATS[fmt])
    table = pq.read_table(path)
    broken = table.set_column(table.schema.get_field_index(column), column,
                              pa.array([value] * table.num_rows, pa.list_(pa.int32())))
    pq.write_table(broken.replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(NotSftpackRows, match=rf"^{re.escape(str(path))}: row 0: {column} \[{value[0]}\] "):
        open_rows_file(path).hash()


@pytest.mark.parametrize("fmt", FORMATS)
def test_convert_into_the_sources_directory_never_touches_the_sources_files(fmt, parquet_build, tmp_path, capsys):
    parquet, parquet_record = parquet_build
    directory = tmp_path / "here"
    directory.mkdir()
    source, source_record = directory / parquet.name, directory / parquet_record.name
    source.write_bytes(parquet.read_bytes())
    source_record.write_bytes(parquet_record.read_bytes())
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    for extra in ([], ["--overwrite"]):
        assert main(["convert", str(source), "--to", fmt, str(directory), *extra]) == 0
        capsys.readouterr()
        assert {name: (directory / name).read_bytes() for name in before} == before
    stem = parquet.name[: -len(".parquet")]
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [*before, stem + FORMATS[fmt], stem + FORMATS[fmt].replace(".parquet", ".build.yaml")])
