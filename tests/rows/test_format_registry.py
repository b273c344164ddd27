"""A new output format is one writer/reader pair: a toy format is registered here, and the build, `hash`,
`verify` and `inspect` go through it; its rows equal the parquet build's (read back through parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sftpack
from sftpack.base.errors import UsageError
from sftpack.builder.config import BuildConfig
from sftpack.cli import main
from sftpack.rows.durable import DurableFile
from sftpack.rows.formats import ROW_FORMATS, RowFormat, new_row_writer, open_rows_file, register_row_format
from sftpack.rows.model import check_format_version
from sftpack.rows.reader import RowsReader
from sftpack.rows.writer import RowsWriter
from sftpack.rows.parquet import FORMAT_VERSION

MODEL = "Qwen3.5-122B-A10B"


class ToyWriter(RowsWriter):
    """One JSON header line, then each row's int32 tokens and mask bytes."""

    def __init__(self, path, row_tokens, build_name):
        super().__init__(path, row_tokens, build_name)
        self.rows, self.provenance = [], []

    def write(self, row):
        self.rows.append(row.tokens.astype("<i4").tobytes() + row.loss_mask.tobytes())
        self.provenance.append([[p.conversation for p in row.pieces], [p.start for p in row.pieces],
                                [p.length for p in row.pieces], [p.offset for p in row.pieces]])

    def close(self):
        header = {"format": FORMAT_VERSION, "row_tokens": self.row_tokens, "build": self.build_name,
                  "provenance": self.provenance}
        file = DurableFile(self.path)  # the writeback, fsync and sha256 every format's file gets
        file.write(json.dumps(header).encode() + b"\n" + b"".join(self.rows))
        return file.finish()

    def abort(self):
        self.rows = []


class ToyReader(RowsReader):
    def __init__(self, path):
        self.path = Path(path)
        head, _, body = self.path.read_bytes().partition(b"\n")
        header = json.loads(head)
        check_format_version(header["format"], path)
        self.version, self.row_tokens, self.build_name = header["format"], header["row_tokens"], header["build"]
        self._provenance = [tuple(v) for v in header["provenance"]]
        rows = np.frombuffer(body, np.uint8).reshape(-1, 5 * self.row_tokens)
        self._tokens = rows[:, : 4 * self.row_tokens].copy().view("<i4")
        self._mask = rows[:, 4 * self.row_tokens :].copy()
        self.group_bounds = np.array([0, len(rows)], dtype=np.int64)

    def read_group(self, group):
        return self._tokens, self._mask

    def read_provenance_group(self, group):
        return self._provenance


@pytest.fixture
def toy_format(monkeypatch):
    monkeypatch.setitem(ROW_FORMATS, "toy", RowFormat(".toyrows", ToyWriter, ToyReader))


def test_a_registered_toy_format_builds_hashes_verifies_and_inspects(toy_format, tmp_path, offline_qwen, capsys):
    def config(fmt, out):
        return BuildConfig(model=MODEL, source="sample", rows=5, row_tokens=512, out=str(out), workers=1,
                           progress=False, format=fmt)

    toy = sftpack.build(config("toy", tmp_path / "toy"), vocab=offline_qwen)
    parquet = sftpack.build(config("parquet", tmp_path / "pq"), vocab=offline_qwen)
    toy_file = toy.paths.parquet  # the rows file, whatever its format
    assert toy_file.suffix == ".toyrows" and toy_file.is_file() and not list((tmp_path / "toy").glob("*.parquet"))
    # the rows are the parquet build's, read back through the parquet reader (an independent path)
    tokens, mask = sftpack.read_rows(parquet.paths.parquet)
    reader = open_rows_file(toy_file)
    assert isinstance(reader, ToyReader)
    assert np.array_equal(reader.read()[0], tokens) and np.array_equal(reader.read()[1], mask)
    assert toy.rows_sha256 == parquet.rows_sha256
    assert toy.parquet_sha256 != parquet.parquet_sha256  # the file's own bytes, whatever its format

    assert main(["hash", str(toy_file)]) == 0
    assert capsys.readouterr().out.split()[0] == parquet.rows_sha256
    record = toy.paths.record
    assert main(["verify", str(record), "--rows", str(toy_file)]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    assert main(["inspect", str(toy_file), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 5 and summary["supervised_tokens"] == int(mask.sum())
    assert summary["conversations"] == len({c for p in sftpack.rows.read_all_provenance(
        parquet.paths.parquet) for c in p.conversation_ids})


def test_an_unknown_format_is_one_line():
    with pytest.raises(UsageError, match=r"^format 'csv': unknown rows format \(known: megatron-bridge, parquet, trl\)$"):
        BuildConfig(model=MODEL, format="csv")


def test_a_newer_format_version_is_refused_by_any_reader(toy_format, tmp_path):
    path = tmp_path / "x.toyrows"
    path.write_bytes(json.dumps({"format": "9", "row_tokens": 2, "build": "x", "provenance": []}).encode() + b"\n")
    with pytest.raises(UsageError, match="rows format 9 is not one this sftpack reads"):
        open_rows_file(path)


def test_the_build_summary_names_the_file_of_the_format_built(toy_format, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "toy"
    assert main(["build", "--model", MODEL, "--source", "sample", "--rows", "2", "--row-tokens", "256", "--out",
                 str(out), "--format", "toy", "--workers", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    (written,) = [p for p in out.iterdir() if p.name.endswith(".toyrows")]
    assert f"  parquet       {written}  (" in printed and ".parquet" not in printed


def test_a_format_registered_twice_or_on_a_known_suffix_is_refused(monkeypatch):
    monkeypatch.setattr("sftpack.rows.formats.ROW_FORMATS", dict(ROW_FORMATS))
    from sftpack.rows import formats

    register_row_format("toy", RowFormat(".toyrows", ToyWriter, ToyReader))
    assert formats.ROW_FORMATS["toy"].suffix == ".toyrows"
    with pytest.raises(ValueError, match=r"^duplicate rows format 'toy': already registered$"):
        register_row_format("toy", RowFormat(".other", ToyWriter, ToyReader))
    with pytest.raises(ValueError, match=r"^rows format 'toy2': suffix '.toyrows' is already 'toy''s$"):
        register_row_format("toy2", RowFormat(".toyrows", ToyWriter, ToyReader))


def test_a_writer_that_is_not_a_rows_writer_is_refused(toy_format, tmp_path, monkeypatch):
    class Loose:  # write and close, but none of the other duties
        def __init__(self, path, row_tokens, build_name):
            pass

    monkeypatch.setitem(ROW_FORMATS, "toy", RowFormat(".toyrows", Loose, ToyReader))
    with pytest.raises(TypeError, match="Loose is not a sftpack.rows.writer.RowsWriter"):
        new_row_writer("toy", tmp_path / "x.toyrows", 4, "x")
