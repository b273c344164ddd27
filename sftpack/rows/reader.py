"""The reader every rows format has: :class:`RowsReader`, one rows file opened and checked once. A format's reader
says where its row groups are and decodes one; reading rows, provenance, batches and the row figures is here once,
through the checks of :mod:`sftpack.rows.validation`."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.rows.hashing import update_rows_sha256
from sftpack.rows.model import NotSftpackRows, Provenance
from sftpack.rows.validation import mask_problem, provenance_problem


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
