"""The rows formats: a registry of writer/reader pairs, by name and by file suffix.

A format is a :class:`RowFormat` in :data:`ROW_FORMATS` (:func:`register_row_format` adds one): its file
``suffix``, a ``writer`` (a :class:`~sftpack.rows.writer.RowsWriter`) and a ``reader`` (a
:class:`~sftpack.rows.reader.RowsReader`). What does not depend on the format is written once beside it: the row
model (:mod:`sftpack.rows.model`), hashing (:mod:`sftpack.rows.hashing`), the reader's rows, provenance and figures
(:mod:`sftpack.rows.reader`), the writer's duties and the durable file (:mod:`sftpack.rows.writer`,
:mod:`sftpack.rows.durable`). sftpack ships parquet (:mod:`sftpack.rows.parquet`, :mod:`sftpack.rows.parquet_writer`)
and the layouts TRL and Megatron-Bridge read (:mod:`sftpack.rows.trl`, :mod:`sftpack.rows.megatron_bridge`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.base.refs import Ref, resolve
from sftpack.rows.reader import RowsReader
from sftpack.rows.writer import RowSink


@dataclass(frozen=True)
class RowFormat:
    suffix: str
    writer: Ref  # (path, row_tokens, build_name) -> RowsWriter
    reader: Ref  # (path) -> RowsReader


ROW_FORMATS: dict[str, RowFormat] = {
    "parquet": RowFormat(".parquet", "sftpack.rows.parquet_writer:RowWriter", "sftpack.rows.parquet:ParquetRows"),
    "trl": RowFormat(".trl.parquet", "sftpack.rows.trl:TrlWriter", "sftpack.rows.trl:TrlRows"),
    "megatron-bridge": RowFormat(".idx.parquet", "sftpack.rows.megatron_bridge:MegatronBridgeWriter",
                                 "sftpack.rows.megatron_bridge:MegatronBridgeRows"),
}


def register_row_format(name: str, fmt: RowFormat) -> None:
    """Add a rows format; a name or suffix already registered is refused in one line."""
    if name in ROW_FORMATS:
        raise ValueError(f"duplicate rows format {name!r}: already registered")
    same = [known for known, other in ROW_FORMATS.items() if other.suffix == fmt.suffix]
    if same:
        raise ValueError(f"rows format {name!r}: suffix {fmt.suffix!r} is already {same[0]!r}'s")
    ROW_FORMATS[name] = fmt


def get_row_format(name: str) -> RowFormat:
    try:
        return ROW_FORMATS[name]
    except (KeyError, TypeError):
        raise UsageError(f"Unknown rows format {name!r}; known: {', '.join(sorted(ROW_FORMATS))}") from None


def format_of_path(path) -> RowFormat:
    """The format whose suffix the file name ends with (the longest that matches: ``.trl.parquet`` before
    ``.parquet``); parquet for any other name (sftpack's own format)."""
    name = Path(path).name
    matching = [fmt for fmt in ROW_FORMATS.values() if name.endswith(fmt.suffix)]
    return max(matching, key=lambda fmt: len(fmt.suffix)) if matching else ROW_FORMATS["parquet"]


def is_of_format(path, name) -> bool:
    """Whether the file ``path`` names is in rows format ``name`` (None: parquet, sftpack's own)."""
    fmt = ROW_FORMATS.get(name or "parquet") if name is None or isinstance(name, str) else None
    return fmt is not None and format_of_path(path) is fmt


def open_rows_file(path) -> RowsReader:
    """The reader of a rows file, by its suffix; it has checked the file and its format version."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    return resolve(format_of_path(path).reader)(path)


def stem_of(path) -> str:
    """``NAME`` of ``NAME.SUFFIX`` (the build name a rows file is written under)."""
    path = Path(path)
    suffix = format_of_path(path).suffix
    return path.name[: -len(suffix)] if path.name.endswith(suffix) else path.stem


def new_row_writer(format_name: str, path, row_tokens: int, build_name: str) -> RowSink:
    return RowSink(resolve(get_row_format(format_name).writer)(path, row_tokens, build_name))
