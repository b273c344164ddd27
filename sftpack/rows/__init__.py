"""Packed rows on disk: read them, their provenance and their figures, whatever the rows format.

``sftpack.rows.read_provenance(path, row)``, ``read_rows``, ``read_row``, ``read_all_provenance``, ``hash_rows``; the
formats' registry is :mod:`sftpack.rows.formats`, the row model :mod:`sftpack.rows.model`, the reader and writer
every format has :mod:`sftpack.rows.reader` and :mod:`sftpack.rows.writer`, the parquet format
:mod:`sftpack.rows.parquet` and :mod:`sftpack.rows.parquet_writer`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sftpack.rows.formats import open_rows_file
from sftpack.rows.hashing import rows_sha256_of
from sftpack.rows.model import NotSftpackRows, Provenance

__all__ = ["NotSftpackRows", "Provenance", "hash_rows", "read_all_provenance", "read_provenance", "read_row", "read_rows",
           "rows_sha256_of"]


def read_rows(path: str | Path, rows: slice | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All rows (or a contiguous slice) as numpy arrays: ``tokens`` int32 [rows, row_tokens], ``loss_mask`` uint8
    [rows, row_tokens]; only the row groups holding them are decoded.

    ``tokens, mask = sftpack.read_rows("qwen35-tulu3-fixed8192-v1.parquet")``
    """
    return open_rows_file(path).read(rows)


def read_row(path: str | Path, row: int) -> tuple[np.ndarray, np.ndarray]:
    """One row's ``(tokens int32 [row_tokens], loss_mask uint8 [row_tokens])``, reading only its row group."""
    return open_rows_file(path).row(row)


def read_provenance(path: str | Path, row: int) -> Provenance:
    """The provenance of row ``row``: reads only the provenance columns of its row group, never the tokens.

    ``sftpack.rows.read_provenance("rows.parquet", 3).boundaries`` -> ``[0, 193, 426, 8192]``
    """
    return open_rows_file(path).provenance(row)


def read_all_provenance(path: str | Path) -> list[Provenance]:
    """Provenance of every row (provenance columns only)."""
    return open_rows_file(path).all_provenance()


def hash_rows(path: str | Path) -> dict:
    """Recompute the row figures of a rows file: ``rows_sha256``, rows, row_tokens, supervised tokens."""
    return open_rows_file(path).hash()
