"""``sftpack convert``: rows already built (a recipe's published rows) written in another rows format.

The rows, their provenance and ``rows_sha256`` are carried over exactly; only the file's layout changes, so that
the result is byte-identical to ``sftpack build --format FMT`` of the same rows. The build record beside the source
(when it describes these rows) is written beside the result with the new file's ``parquet_sha256`` and
``parquet_bytes``, so that ``sftpack verify`` checks the converted file against it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.builder.output import OutputFiles
from sftpack.builder.record import BuildRecord, record_path_beside
from sftpack.rows.formats import get_row_format, new_row_writer, open_rows_file, stem_of
from sftpack.rows.model import Piece, Row


@dataclasses.dataclass(frozen=True)
class Converted:
    rows_file: Path
    record: Path | None  # None: the source had no build record describing its rows
    rows: int
    rows_sha256: str


def _rows_of(reader):
    """Every row of ``reader`` with its pieces, one row group decoded at a time."""
    for group in range(len(reader.group_bounds) - 1):
        tokens, mask = reader.checked_group(group)
        for index, (ids, starts, lengths, offsets) in enumerate(reader.checked_provenance(group)):
            pieces = [Piece(*piece) for piece in zip(ids, starts, lengths, offsets)]
            yield Row(np.ascontiguousarray(tokens[index]), np.ascontiguousarray(mask[index]), pieces)


def _source_record(source: Path) -> BuildRecord | None:
    path = record_path_beside(source)
    if not path.is_file():
        return None
    return BuildRecord.from_yaml(path.read_text(encoding="utf-8"), where=str(path))


def convert_rows(source, to: str, out_dir, overwrite: bool = False) -> Converted:
    """Write the rows of ``source`` (any rows format) as ``OUT/NAME.SUFFIX`` in format ``to``, and the source's build
    record as ``OUT/NAME.build.yaml`` (when it describes these rows)."""
    source = Path(source)
    fmt = get_row_format(to)
    reader = open_rows_file(source)
    if not reader.has_provenance:
        raise UsageError(f"{source}: the rows have no provenance columns, so where each conversation starts is "
                         f"unknown; the {to} format needs it")
    name = stem_of(source)
    record = _source_record(source)
    with OutputFiles(out_dir, name, overwrite, suffix=fmt.suffix) as files:
        if files.parquet.resolve() == source.resolve():
            raise UsageError(f"{source}: converting a file onto itself")
        sink = new_row_writer(to, files.tmp_parquet, reader.row_tokens, reader.build_name or name)
        try:
            for row in _rows_of(reader):
                sink.write(row)
            sha256, size = sink.close()
        except UsageError as e:  # a row the format cannot hold: name the file it comes from
            sink.abort()
            raise UsageError(f"{source}: {e}") from None
        except BaseException:
            sink.abort()
            raise
        if record is not None and record.rows_sha256 != sink.rows_sha256:
            record = None  # it describes other rows
        if record is not None:
            record = dataclasses.replace(record, parquet_sha256=sha256, parquet_bytes=size,
                                         rows_format=None if to == "parquet" else to)
        files.commit(record)
        return Converted(files.parquet, files.record if record else None, sink.rows, sink.rows_sha256)
