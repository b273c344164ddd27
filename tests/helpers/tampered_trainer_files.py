"""The tampered trainer files in ``tests/data/tampered/``: TRL (``.trl.parquet``) and Megatron-Bridge (``.idx.parquet``)
rows files that a trainer would read differently from what a lenient reader reports: boundary lists that only sum to
the row, reversed or shifted boundaries, null boundary lists and null values, ids stored as int64 (2**32 added),
strings or floats, a float mask. Each is a good two-row file written by sftpack's own writer with one column edited.

Regenerate them with ``python tests/helpers/tampered_trainer_files.py`` (``tests/rows/test_tampered_trainer_files.py``
checks that the committed files are what this script writes, and states each one's outcome).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROW_TOKENS = 16
DIRECTORY = Path(__file__).resolve().parents[1] / "data" / "tampered"
SUFFIX = {"trl": ".trl.parquet", "megatron-bridge": ".idx.parquet"}
BOUNDARY = {"trl": "seq_lengths", "megatron-bridge": "seq_start_id"}
MASK = {"trl": "assistant_masks", "megatron-bridge": "loss_mask"}


def good_rows():
    """Two rows of 16 tokens: row 0 holds conversations a and b (documents [0, 8), [8, 16)), row 1 holds c, d and e
    (documents [0, 4), [4, 10), [10, 16)); the EOS after each conversation is unsupervised, no document starts on a
    target."""
    from sftpack.rows.model import Piece, Row

    mask0 = np.zeros(ROW_TOKENS, np.uint8)
    mask0[[3, 4, 5, 6, 11, 12, 13, 14]] = 1
    mask1 = np.zeros(ROW_TOKENS, np.uint8)
    mask1[[2, 6, 7, 8, 13, 14]] = 1
    return [
        Row(np.arange(100, 116, dtype=np.int32), mask0, [Piece("a", 0, 7, 0), Piece("b", 8, 7, 0)]),
        Row(np.arange(200, 216, dtype=np.int32), mask1, [Piece("c", 0, 3, 0), Piece("d", 4, 5, 0),
                                                          Piece("e", 10, 5, 0)]),
    ]


def write_good(path: Path, fmt: str) -> Path:
    from sftpack.rows.formats import new_row_writer

    writer = new_row_writer(fmt, path, ROW_TOKENS, "tampered")
    for row in good_rows():
        writer.write(row)
    writer.close()
    return path


def _list_column(table: pa.Table, column: str, row: int, value, value_type: pa.DataType | None = None) -> pa.Table:
    """``table`` with row ``row`` of list column ``column`` set to ``value`` (the column typed ``value_type``)."""
    values = table.column(column).to_pylist()
    values[row] = value
    field_type = pa.list_(value_type) if value_type is not None else table.schema.field(column).type
    return table.set_column(table.schema.get_field_index(column), column, pa.array(values, field_type))


def _retyped(column: str, value_type: pa.DataType, change=lambda v: v):
    def edit(table):
        values = [[change(x) for x in row] for row in table.column(column).to_pylist()]
        return table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.list_(value_type)))
    return edit


def cases(fmt: str) -> dict:
    """``{case: edit(table) -> table}`` for one format."""
    b, m = BOUNDARY[fmt], MASK[fmt]
    one_document = [ROW_TOKENS] if fmt == "trl" else [0]
    edits = {
        "one-document": lambda t: _list_column(t, b, 1, one_document),
        "reversed": lambda t: _list_column(t, b, 1, [6, 6, 4] if fmt == "trl" else [10, 4, 0]),
        "shifted": lambda t: _list_column(t, b, 1, [5, 5, 6] if fmt == "trl" else [0, 5, 10]),
        "null-boundaries": lambda t: _list_column(t, b, 1, None),
        "null-boundary-value": lambda t: _list_column(t, b, 1, [4, None, 6] if fmt == "trl" else [0, None, 10]),
        "boundaries-int64": _retyped(b, pa.int64()),
        "ids-int64-plus-2-32": _retyped("input_ids", pa.int64(), lambda v: v + 2**32),
        "ids-strings": _retyped("input_ids", pa.string(), str),
        "ids-floats": _retyped("input_ids", pa.float64(), float),
        "mask-floats": _retyped(m, pa.float32(), float),
        "null-id": lambda t: _list_column(t, "input_ids", 1, [None] + list(range(201, 216))),
    }
    if fmt == "trl":
        edits["zero-length"] = lambda t: _list_column(t, b, 1, [4, 0, 6, 6])
    else:
        edits["past-the-row"] = lambda t: _list_column(t, b, 1, [0, 4, 20])
    return edits


def write_all(directory: Path = DIRECTORY) -> list[Path]:
    """Every tampered file (and the good one per format) written into ``directory``; their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt, suffix in SUFFIX.items():
        good = write_good(directory / f"good{suffix}", fmt)
        written.append(good)
        table = pq.read_table(good)
        for case, edit in cases(fmt).items():
            path = directory / f"{case}{suffix}"
            pq.write_table(edit(table).replace_schema_metadata(table.schema.metadata), path, compression="zstd",
                           write_statistics=False)
            written.append(path)
    return written


if __name__ == "__main__":
    for written in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else DIRECTORY):
        print(written)
