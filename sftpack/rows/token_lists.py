"""What the trainers' own layouts share: a parquet file with one ``list<int32>`` column of token ids per row.

TRL (:mod:`sftpack.rows.trl`) and Megatron-Bridge (:mod:`sftpack.rows.megatron_bridge`) read pre-packed rows as
parquet with an ``input_ids`` list column, a per-token loss-mask list column and the row's document boundaries in
a list column of their own. A layout here is a :class:`TokenListLayout`: its column names and how it encodes and
decodes the mask and the boundaries of a row group. Beside those columns every such file keeps sftpack's own:
``supervised_tokens`` and the provenance columns (which conversations each row holds), and the parquet
key-value metadata ``sftpack.format``, ``sftpack.row_tokens`` and ``sftpack.build``; the trainers read only
the columns they name. Files are written with fixed options (the bytes depend only on the rows and the pyarrow
version) in row groups of :data:`ROWS_PER_GROUP` rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.base.errors import UsageError
from sftpack.rows.model import META_BUILD, META_FORMAT, META_ROW_TOKENS, NotSftpackRows, check_format_version
from sftpack.rows.reader import RowsReader
from sftpack.rows.parquet import FORMAT_VERSION, PROVENANCE_COLUMNS
from sftpack.rows.validation import duplicated_columns
from sftpack.rows.durable import DurableFile
from sftpack.rows.writer import RowsWriter

ROWS_PER_GROUP = 64
WRITER_OPTIONS = dict(compression="zstd", compression_level=3, use_dictionary=False, write_statistics=False,
                      version="2.6", data_page_version="1.0")
TOKEN_LIST = pa.list_(pa.int32())
MASK_LIST = pa.list_(pa.int8())
PROVENANCE_SCHEMA = [
    pa.field("supervised_tokens", pa.int32()),
    pa.field("conversation_ids", pa.list_(pa.string())),
    pa.field("conversation_starts", pa.list_(pa.int32())),
    pa.field("conversation_lengths", pa.list_(pa.int32())),
    pa.field("conversation_offsets", pa.list_(pa.int32())),
]


class BadBoundaries(ValueError):
    """A row's boundary column does not describe its documents (``row``: index within the row group)."""

    def __init__(self, row: int, message: str):
        super().__init__(message)
        self.row = row


@dataclass(frozen=True)
class TokenListLayout:
    """A trainer's layout. ``mask_column`` and ``boundary_column`` are the list columns beside ``input_ids``;
    ``encode(tokens, mask, boundaries) -> (stored_mask, stored_boundaries)`` and
    ``decode(tokens, stored_mask, stored_boundaries) -> mask`` convert one row group ([n, row_tokens] arrays;
    ``boundaries`` per row: 0, every document start, row_tokens); ``stored(boundaries)`` is one row's boundary
    list as the layout stores it, which a reader compares with what the row's provenance says."""

    name: str
    mask_column: str
    boundary_column: str
    encode: Callable
    decode: Callable
    stored: Callable

    def fields(self) -> list:
        """Every column of the layout, with its exact type."""
        return [pa.field("input_ids", TOKEN_LIST), pa.field(self.mask_column, MASK_LIST),
                pa.field(self.boundary_column, pa.list_(pa.int32())), *PROVENANCE_SCHEMA]

    def schema(self, row_tokens: int, build_name: str) -> pa.Schema:
        return pa.schema(self.fields(), metadata={META_FORMAT: FORMAT_VERSION, META_ROW_TOKENS: str(row_tokens),
                                                  META_BUILD: build_name})


def row_boundaries(pieces, row_tokens: int) -> list[int]:
    """0, the start of every conversation piece, and ``row_tokens``: the row's documents (the EOS after a
    conversation stays with it), as :attr:`sftpack.rows.model.Provenance.boundaries` has them."""
    return sorted({0, *(piece.start for piece in pieces), row_tokens})


def _lists(rows: list, values: np.ndarray, value_type: pa.DataType) -> pa.Array:
    """A list column: row ``i`` holds ``rows[i]`` consecutive values of ``values``."""
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(rows, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=value_type))


def _matrix_column(values: np.ndarray, value_type: pa.DataType) -> pa.Array:
    """[n, row_tokens] as n lists of row_tokens values."""
    return _lists([values.shape[1]] * len(values), values.reshape(-1), value_type)


class TokenListWriter(RowsWriter):
    """Writes rows in a :class:`TokenListLayout` (the subclass names it) with ``write(row)`` and
    ``close() -> (sha256, bytes)``; the build's sink hashes the rows."""

    layout: TokenListLayout

    def __init__(self, path, row_tokens: int, build_name: str):
        super().__init__(path, row_tokens, build_name)
        self._schema = self.layout.schema(row_tokens, build_name)
        self._writer = pq.ParquetWriter(self.path, self._schema, **WRITER_OPTIONS)
        self._file = DurableFile(self.path, written_elsewhere=True)  # pyarrow writes the file; this syncs and hashes it
        self._pending: list = []
        self.rows = 0

    def write(self, row) -> None:
        self._pending.append(row)
        self.rows += 1
        if len(self._pending) == ROWS_PER_GROUP:
            self._flush()

    def _flush(self) -> None:
        rows, self._pending = self._pending, []
        if not rows:
            return
        tokens = np.stack([row.tokens for row in rows]).astype(np.int32, copy=False)
        mask = np.stack([row.loss_mask for row in rows])
        boundaries = [row_boundaries(row.pieces, self.row_tokens) for row in rows]
        try:
            stored_mask, stored_boundaries = self.layout.encode(tokens, mask, boundaries)
        except BadBoundaries as e:
            raise UsageError(f"row {self.rows - len(rows) + e.row}: {e}; the {self.layout.name} layout cannot hold "
                             "it") from None
        pieces = [row.pieces for row in rows]
        per_row = [len(p) for p in pieces]
        flat = [piece for row_pieces in pieces for piece in row_pieces]
        columns = [
            _matrix_column(tokens, pa.int32()),
            _matrix_column(stored_mask.astype(np.int8), pa.int8()),
            _lists([len(b) for b in stored_boundaries], np.array([v for b in stored_boundaries for v in b], np.int32),
                   pa.int32()),
            pa.array([row.supervised for row in rows], pa.int32()),
            _lists(per_row, np.array([p.conversation for p in flat], dtype=object), pa.string()),
            *(_lists(per_row, np.array([getattr(p, key) for p in flat], np.int32), pa.int32())
              for key in ("start", "length", "offset")),
        ]
        self._writer.write_table(pa.Table.from_arrays(columns, schema=self._schema), row_group_size=len(rows))
        self._file.advance()

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            self._file.abort()

    def close(self) -> tuple[str, int]:
        """Finish the file, durable on disk; its (sha256, size in bytes)."""
        try:
            self._flush()
            self._writer.close()
        except BaseException:
            self._file.abort()
            raise
        return self._file.finish()


def _nulls(array: pa.Array) -> int | None:
    """Index of the first row that is null or holds a null value, or None."""
    if array.null_count:
        return int(np.flatnonzero(~array.is_valid().to_numpy(zero_copy_only=False))[0])
    if array.values.null_count:
        offsets = array.offsets.to_numpy()
        first = offsets[0] + int(np.flatnonzero(~array.values.slice(offsets[0]).is_valid().to_numpy(
            zero_copy_only=False))[0])
        return int(np.searchsorted(offsets, first, side="right")) - 1
    return None


def _list_matrix(column, width: int, dtype, what: str, path, first_row: int) -> np.ndarray:
    """A list column whose lists all hold ``width`` values, as [n, width] (one copy of the values)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    null = _nulls(array)
    if null is not None:
        raise NotSftpackRows(f"{path}: row {first_row + null}: `{what}` is null or holds a null")
    offsets = array.offsets.to_numpy()
    wrong = np.flatnonzero(np.diff(offsets) != width)
    if len(wrong):
        raise NotSftpackRows(f"{path}: row {first_row + int(wrong[0])}: `{what}` holds "
                             f"{int(offsets[wrong[0] + 1] - offsets[wrong[0]])} values, not the row's {width}")
    values = array.values.slice(offsets[0], width * len(array)) if len(array) else array.values.slice(0, 0)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=dtype).reshape(len(array), width)


def _type_name(value_type: pa.DataType) -> str:
    """``list<int32>``: a type as the messages write it (a list's item name left out)."""
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type):
        return f"{'large_' if pa.types.is_large_list(value_type) else ''}list<{_type_name(value_type.value_type)}>"
    return str(value_type)


def _type_problem(schema: pa.Schema, expected: list) -> str | None:
    """The first column whose type is not exactly the layout's (a reader must not coerce: int64 ids would be read
    modulo 2**32, floats and strings converted), or None. A list's item name (``item``, ``element``) is free."""
    for field in expected:
        if field.name in schema.names and _type_name(schema.field(field.name).type) != _type_name(field.type):
            return f"column `{field.name}` is {_type_name(schema.field(field.name).type)}, not {_type_name(field.type)}"
    return None


def _shown(values: list) -> str:
    return str(values) if len(values) <= 8 else f"[{', '.join(map(str, values[:8]))}, … ({len(values)} values)]"


class TokenListRows(RowsReader):
    """Reads a file in a :class:`TokenListLayout` (the subclass names it): row groups are parquet row groups.
    Nothing is coerced: every column has exactly the layout's type, no row or value is null, and each row's
    boundary list is exactly the one its provenance's conversation starts give (what a trainer reads is what
    ``rows_sha256`` and ``inspect`` describe)."""

    layout: TokenListLayout

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.file = pq.ParquetFile(self.path)
        except Exception as e:
            raise NotSftpackRows(f"{self.path}: not a parquet file ({e})") from None
        meta = self.file.schema_arrow.metadata or {}
        if META_FORMAT.encode() not in meta or META_ROW_TOKENS.encode() not in meta:
            raise NotSftpackRows(f"{self.path}: not sftpack rows (no {META_FORMAT} / {META_ROW_TOKENS} metadata)")
        check_format_version(meta[META_FORMAT.encode()].decode("utf-8", "replace"), self.path)
        names = self.file.schema_arrow.names
        twice = duplicated_columns(names)
        if twice:  # a reader asking for such a column by name cannot know which one it gets
            raise NotSftpackRows(f"{self.path}: not sftpack rows (column {', '.join(map(repr, twice))} appears more "
                                 "than once)")
        missing = [c for c in ("input_ids", self.layout.mask_column, self.layout.boundary_column, *PROVENANCE_COLUMNS)
                   if c not in names]
        if missing:  # without the provenance, the boundaries a trainer reads could not be checked
            raise NotSftpackRows(f"{self.path}: not sftpack rows in the {self.layout.name} layout "
                                 f"({', '.join(missing)} missing)")
        wrong = _type_problem(self.file.schema_arrow, self.layout.fields())
        if wrong:
            raise NotSftpackRows(f"{self.path}: {wrong}: not the {self.layout.name} layout's type")
        try:
            self.row_tokens = int(meta[META_ROW_TOKENS.encode()])
        except ValueError:
            raise NotSftpackRows(f"{self.path}: {META_ROW_TOKENS} is not a number") from None
        self.build_name = meta.get(META_BUILD.encode(), b"").decode("utf-8", "replace") or None
        sizes = [self.file.metadata.row_group(g).num_rows for g in range(self.file.metadata.num_row_groups)]
        self.group_bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.has_provenance = True

    @property
    def boundaries_checked(self) -> str:
        """What every read checks of the boundary column (``hash`` and ``verify`` say it)."""
        return (f"{self.layout.boundary_column} checked in every row: the {self.layout.name} document boundaries "
                "equal the provenance's conversation starts")

    def hash(self, per_row: bool = False) -> dict:
        return {**super().hash(per_row), "boundaries": self.boundaries_checked}

    def read_group(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        layout, first = self.layout, int(self.group_bounds[group])
        table = self.file.read_row_group(group, columns=["input_ids", layout.mask_column, layout.boundary_column],
                                         use_threads=False)
        tokens = _list_matrix(table.column("input_ids"), self.row_tokens, np.int32, "input_ids", self.path, first)
        stored = _list_matrix(table.column(layout.mask_column), self.row_tokens, np.int16, layout.mask_column,
                              self.path, first)
        bad = np.flatnonzero(((stored < 0) | (stored > 1)).any(axis=1))
        if len(bad):
            raise NotSftpackRows(f"{self.path}: row {first + int(bad[0])}: `{layout.mask_column}` holds values "
                                 "other than 0 and 1")
        column = table.column(layout.boundary_column).combine_chunks()
        null = _nulls(column)
        if null is not None:
            raise NotSftpackRows(f"{self.path}: row {first + null}: `{layout.boundary_column}` is null or holds a "
                                 "null")
        boundaries = column.to_pylist()
        try:
            mask = layout.decode(tokens, stored.astype(np.uint8), boundaries)
        except BadBoundaries as e:
            raise NotSftpackRows(f"{self.path}: row {first + e.row}: {layout.boundary_column} {e}") from None
        self._compare_with_provenance(group, boundaries)
        return tokens, mask

    def _compare_with_provenance(self, group: int, boundaries: list) -> None:
        """Refuse a row whose boundary list is not the one its provenance gives (a list that merely sums to the
        row, reversed, or one document for several conversations would make a trainer attend across them)."""
        first = int(self.group_bounds[group])
        for k, (row, values) in enumerate(zip(boundaries, self.checked_provenance(group))):
            expected = self.layout.stored(sorted({0, *values[1], self.row_tokens}))
            if list(row) != list(expected):
                raise NotSftpackRows(f"{self.path}: row {first + k}: `{self.layout.boundary_column}` {_shown(row)} "
                                     f"is not the row's documents {_shown(expected)} (where its provenance's "
                                     "conversations start)")

    def read_provenance_group(self, group: int) -> list[tuple]:
        table = self.file.read_row_group(group, columns=PROVENANCE_COLUMNS)
        columns = [table.column(c).to_pylist() for c in PROVENANCE_COLUMNS]
        return [tuple(v or [] for v in values) for values in zip(*columns)]

    def stored_supervised_per_row(self) -> np.ndarray | None:
        if "supervised_tokens" not in self.file.schema_arrow.names:
            return None
        column = self.file.read(columns=["supervised_tokens"]).column("supervised_tokens")
        if column.null_count:
            return None  # counted from the masks instead
        return column.to_numpy().astype(np.int64)
