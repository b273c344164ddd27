"""Output formats of the rows: a writer/reader pair per format, and what every format shares.

A format is a :class:`RowFormat` in :data:`ROW_FORMATS`: its file ``suffix``, a ``writer(path, row_tokens,
build_name)`` with ``write(row)`` and ``close() -> (sha256, bytes)``, and a ``reader(path)`` that is a
:class:`RowsReader`. What does not depend on the format - ``rows_sha256``, the row and supervised-token counts
(:class:`RowSink`), hashing a file back, reading rows, provenance and batches (:class:`RowsReader`'s methods) - is
here once. A reader only has to say where its row groups are (``group_bounds``) and decode one
(``read_group``, ``read_provenance_group``); ``hash``, ``verify``, ``inspect``, the rollout and ``loss`` all go
through that object. sftpack ships parquet (:mod:`sftpack.rows.parquet`, :mod:`sftpack.rows.parquet_writer`) and the
layouts TRL and Megatron-Bridge read (:mod:`sftpack.rows.trl`, :mod:`sftpack.rows.megatron_bridge`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.base.refs import Ref, resolve
from sftpack.rows.validation import mask_problem, provenance_problem


@dataclass(frozen=True)
class RowFormat:
    suffix: str
    writer: Ref  # (path, row_tokens, build_name) -> object with write(row), close() -> (sha256, bytes)
    reader: Ref  # (path) -> RowsReader


ROW_FORMATS: dict[str, RowFormat] = {
    "parquet": RowFormat(".parquet", "sftpack.rows.parquet_writer:RowWriter", "sftpack.rows.parquet:ParquetRows"),
    "trl": RowFormat(".trl.parquet", "sftpack.rows.trl:TrlWriter", "sftpack.rows.trl:TrlRows"),
    "megatron-bridge": RowFormat(".idx.parquet", "sftpack.rows.megatron_bridge:MegatronBridgeWriter",
                                 "sftpack.rows.megatron_bridge:MegatronBridgeRows"),
}


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


def open_rows_file(path) -> "RowsReader":
    """The reader of a rows file, by its suffix; it has checked the file and its format version."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    return resolve(format_of_path(path).reader)(path)


HASH_BLOCK_ROWS = 64  # rows interleaved per hash update


def update_rows_sha256(h, tokens: np.ndarray, mask: np.ndarray) -> None:
    """Feed rows to ``h`` as ``rows_sha256`` hashes them: each row's token ids as little-endian int32, then its
    mask bytes. A block of rows is interleaved once and hashed in one call: every return from a GIL-free call may
    wait for the GIL while another thread is busy (the writer hashes on its own thread while the build packs)."""
    tokens = np.ascontiguousarray(tokens, dtype="<i4")
    mask = np.ascontiguousarray(mask, dtype=np.uint8)
    for start in range(0, len(tokens), HASH_BLOCK_ROWS):
        block = slice(start, start + HASH_BLOCK_ROWS)
        h.update(np.concatenate([tokens[block].view(np.uint8), mask[block]], axis=1).data)


def stem_of(path) -> str:
    """``NAME`` of ``NAME.SUFFIX`` (the build name a rows file is written under)."""
    path = Path(path)
    suffix = format_of_path(path).suffix
    return path.name[: -len(suffix)] if path.name.endswith(suffix) else path.stem


class RowSink:
    """What the build writes rows through: counts them and hashes them (``rows_sha256``), whatever the format;
    the format's writer stores them. A writer that hashes the rows itself (the parquet writer does it on its own
    thread, off the packing loop) exposes ``rows_sha256`` and the sink takes that hash instead."""

    def __init__(self, writer):
        self.writer = writer
        self.rows = 0
        self.supervised = 0
        self._hash = None if hasattr(type(writer), "rows_sha256") else hashlib.sha256()

    def write(self, row) -> None:
        if self._hash is not None:
            update_rows_sha256(self._hash, row.tokens[None], row.loss_mask[None])
        self.rows += 1
        self.supervised += row.supervised
        self.writer.write(row)

    @property
    def rows_sha256(self) -> str:
        return self._hash.hexdigest() if self._hash is not None else self.writer.rows_sha256

    @property
    def timings(self) -> dict:
        return getattr(self.writer, "timings", {})

    def abort(self) -> None:
        """Stop writing after an error (the build removes the temporary file)."""
        if hasattr(self.writer, "abort"):
            self.writer.abort()

    def close(self) -> tuple[str, int]:
        """Finish the file; its (sha256, size in bytes)."""
        return self.writer.close()


def new_row_writer(format_name: str, path, row_tokens: int, build_name: str) -> RowSink:
    return RowSink(resolve(get_row_format(format_name).writer)(path, row_tokens, build_name))


class RowsReader:
    """One rows file, opened and checked once. Subclasses set ``path``, ``row_tokens``, ``build_name`` and
    ``group_bounds`` (first row of each row group, then the row count) and
    decode one group: ``read_group(g) -> (tokens int32 [n, row_tokens], loss_mask uint8 [n, row_tokens])`` and
    ``read_provenance_group(g) -> list of (ids, starts, lengths, offsets)`` per row. Everything else reads
    through ``checked_group`` / ``checked_provenance``, which refuse what :mod:`sftpack.rows.validation` refuses."""

    path: Path
    row_tokens: int
    build_name: str | None
    group_bounds: np.ndarray

    def read_group(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def read_provenance_group(self, group: int) -> list[tuple]:
        raise NotImplementedError

    has_provenance = True  # whether read_provenance_group can answer
    _masks_checked = False

    def checked_group(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        """``read_group(group)``; :class:`NotSftpackRows` naming the first row whose loss mask is not 0/1."""
        tokens, mask = self.read_group(group)
        self._refuse_masks(mask, group)
        return tokens, mask

    def _refuse_masks(self, mask: np.ndarray, group: int) -> None:
        problem = mask_problem(mask, int(self.group_bounds[group]))
        if problem:
            raise NotSftpackRows(f"{self.path}: {problem}")

    def checked_provenance(self, group: int) -> list[tuple]:
        """``read_provenance_group(group)``; :class:`NotSftpackRows` naming the first row whose provenance does
        not fit it."""
        values, first = self.read_provenance_group(group), int(self.group_bounds[group])
        for k, row in enumerate(values):
            problem = provenance_problem(row, first + k, self.row_tokens)
            if problem:
                raise NotSftpackRows(f"{self.path}: {problem}")
        return values

    def check_masks(self) -> None:
        """Every row's loss mask checked (once per reader): one row read is refused as the whole file is."""
        if not self._masks_checked:
            for g in range(len(self.group_bounds) - 1):
                self._refuse_masks(self.read_masks(g), g)
            self._masks_checked = True

    def read_masks(self, group: int) -> np.ndarray:
        """The loss masks of one group; a format that can decode them without the tokens says so here."""
        return self.read_group(group)[1]

    @property
    def num_rows(self) -> int:
        return int(self.group_bounds[-1])

    def group_of(self, row: int) -> tuple[int, int]:
        """(row group, index within it) of row ``row``; UsageError when out of range."""
        if not 0 <= row < self.num_rows:
            raise UsageError(f"row {row} is out of range: the file has {self.num_rows} rows (0..{self.num_rows - 1})")
        group = int(np.searchsorted(self.group_bounds, row, side="right")) - 1
        return group, row - int(self.group_bounds[group])

    def groups(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for g in range(len(self.group_bounds) - 1):
            yield self.checked_group(g)

    def read(self, rows: slice | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``rows`` (a contiguous slice; all by default), decoding only the groups that hold them."""
        start, stop, step = (rows or slice(None)).indices(self.num_rows)
        if step != 1:
            raise ValueError("read_rows: only contiguous slices")
        bounds = self.group_bounds
        parts = [(g, self.checked_group(g)) for g in range(len(bounds) - 1) if bounds[g] < stop and bounds[g + 1] > start]
        if not parts:
            return np.zeros((0, self.row_tokens), np.int32), np.zeros((0, self.row_tokens), np.uint8)
        if len(parts) == 1:
            tokens, mask = parts[0][1]
        else:
            tokens = np.concatenate([t for _, (t, _) in parts])
            mask = np.concatenate([m for _, (_, m) in parts])
        first = int(bounds[parts[0][0]])
        return tokens[start - first : stop - first], mask[start - first : stop - first]

    def row(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        group, index = self.group_of(row)
        self.check_masks()  # refused as hash() refuses the file, whichever row holds the bad value
        tokens, mask = self.checked_group(group)
        return tokens[index], mask[index]

    def provenance(self, row: int):
        group, index = self.group_of(row)
        return Provenance(row, self.row_tokens, *self.checked_provenance(group)[index])

    def provenance_range(self, start: int, stop: int) -> list:
        """Provenance of rows ``start .. stop`` (within the file), each row group's columns decoded once: asking
        ``provenance`` row by row decodes a whole group per row."""
        out, bounds = [], self.group_bounds
        for g in range(len(bounds) - 1):
            first, end = int(bounds[g]), int(bounds[g + 1])
            if first < stop and end > start:
                values = self.checked_provenance(g)
                out += [Provenance(k, self.row_tokens, *values[k - first]) for k in range(max(start, first), min(stop, end))]
        return out

    def all_provenance(self) -> list:
        return self.provenance_range(0, self.num_rows)

    def stored_supervised_per_row(self) -> np.ndarray | None:
        """Supervised tokens per row as the file stores them (int64), or None where it stores none."""
        return None

    def supervised_per_row(self) -> np.ndarray:
        stored = self.stored_supervised_per_row()
        if stored is not None:
            return stored
        return np.concatenate([m.sum(axis=1, dtype=np.int64) for _, m in self.groups()] or [np.zeros(0, np.int64)])

    def hash(self, per_row: bool = False) -> dict:
        """The row figures: ``rows_sha256``, rows, row_tokens, supervised tokens and ratio; with ``per_row``
        also ``supervised_per_row`` (int64 per row), counted on the same pass over the masks."""
        h = hashlib.sha256()
        rows = supervised = 0
        counts = []
        for tokens, mask in self.groups():
            update_rows_sha256(h, tokens, mask)
            rows += len(tokens)
            counts.append(mask.sum(axis=1, dtype=np.int64))
            supervised += int(counts[-1].sum())
        self._masks_checked = True
        figures = {
            "rows_sha256": h.hexdigest(),
            "rows": rows,
            "row_tokens": self.row_tokens,
            "supervised_tokens": supervised,
            "supervised_token_ratio": supervised / (rows * self.row_tokens) if rows else 0.0,
        }
        if per_row:
            figures["supervised_per_row"] = np.concatenate(counts or [np.zeros(0, np.int64)])
        return figures


# The file-level metadata keys (parquet key-value metadata; another format stores the same three facts).
META_FORMAT, META_ROW_TOKENS, META_BUILD = "sftpack.format", "sftpack.row_tokens", "sftpack.build"


READABLE_FORMATS = ("1", "2")  # versions this sftpack reads; a file claiming another is refused


def rows_sha256_of(tokens: np.ndarray, loss_mask: np.ndarray) -> str:
    """SHA-256 over rows in order: each row's token ids as little-endian int32, then its mask bytes.

    >>> rows_sha256_of(np.array([[1, 2]], np.int32), np.array([[0, 1]], np.uint8)) == __import__("hashlib").sha256(
    ...     b"\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00\\x01").hexdigest()
    True
    """
    h = hashlib.sha256()
    update_rows_sha256(h, tokens, loss_mask)
    return h.hexdigest()


class NotSftpackRows(UsageError):
    pass


def check_format_version(version: str, path) -> None:
    """Refuse, in one line, a rows file whose format version this sftpack does not read (any format)."""
    if version not in READABLE_FORMATS:
        shown = version if version.isprintable() and len(version) <= 20 else repr(version[:20])
        raise NotSftpackRows(f"{path}: rows format {shown} is not one this sftpack reads "
                             f"({', '.join(READABLE_FORMATS)}): upgrade sftpack (pip install -U sftpack)")


@dataclass
class Provenance:
    """Which source conversations a row holds. Piece ``i`` is conversation ``conversation_ids[i]``'s tokens
    ``[offsets[i], offsets[i] + lengths[i])``, at row positions ``[starts[i], starts[i] + lengths[i])``; an
    offset > 0 means the conversation began in an earlier row. Positions no piece covers are the EOS tokens
    the packer put between conversations."""

    row: int
    row_tokens: int
    conversation_ids: list[str]
    starts: list[int]
    lengths: list[int]
    offsets: list[int]

    @property
    def boundaries(self) -> list[int]:
        """Document boundaries for varlen/THD attention (``cu_seqlens`` of the row): 0, the start of every
        conversation piece, and ``row_tokens``. The EOS after a conversation stays in that conversation's
        segment (it is the token the conversation's last token predicts)."""
        return sorted({0, *self.starts, self.row_tokens})

    def pieces(self) -> list[dict]:
        return [
            {"conversation": c, "start": s, "length": n, "offset": o}
            for c, s, n, o in zip(self.conversation_ids, self.starts, self.lengths, self.offsets)
        ]


@dataclass
class Piece:
    """A run of one conversation's tokens inside a row: ``tokens[start:start+length]`` of the row are the
    conversation's tokens ``[offset, offset+length)``."""

    conversation: str
    start: int
    length: int
    offset: int


class Pieces(Sequence):
    """A row's pieces as arrays, read as :class:`Piece` objects on demand: the packer cuts a whole chunk's rows at
    once, and a Piece object per piece cost its one thread 21% of its GIL time at 16 workers (py-spy, the 16-core
    host); the parquet writer takes the arrays as they are.

    >>> pieces = Pieces(["a", "b"], np.array([0, 5]), np.array([5, 3]), np.array([2, 0]))
    >>> pieces[1], len(pieces), pieces == [Piece("a", 0, 5, 2), Piece("b", 5, 3, 0)]
    (Piece(conversation='b', start=5, length=3, offset=0), 2, True)
    """

    __slots__ = ("ids", "starts", "lengths", "offsets")

    def __init__(self, ids: list, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray):
        self.ids, self.starts, self.lengths, self.offsets = ids, starts, lengths, offsets

    @classmethod
    def of(cls, pieces: Sequence[Piece]) -> "Pieces":
        """``pieces`` (:class:`Piece` objects, or already Pieces) as Pieces."""
        if isinstance(pieces, Pieces):
            return pieces
        numbers = [np.array([getattr(p, f) for p in pieces], dtype=np.int64) for f in ("start", "length", "offset")]
        return cls([p.conversation for p in pieces], *numbers)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        return Piece(self.ids[index], int(self.starts[index]), int(self.lengths[index]), int(self.offsets[index]))

    def __iter__(self):
        return map(Piece, self.ids, self.starts.tolist(), self.lengths.tolist(), self.offsets.tolist())

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass
class Row:
    tokens: np.ndarray  # int32, row_tokens
    loss_mask: np.ndarray  # uint8 0/1, row_tokens
    pieces: Sequence[Piece] = field(default_factory=list)  # a list, or Pieces

    @cached_property  # read by the sink, the writer and the supervised_tokens column: summed once
    def supervised(self) -> int:
        return int(self.loss_mask.sum())
