"""The packed-rows parquet format: schema and fast readers.

One parquet row per packed row. ``tokens`` holds the row's token ids as little-endian int32 bytes and
``loss_mask`` one byte (0/1) per token: exactly the bytes ``rows_sha256`` hashes, and cheap for slime's
loader (``to_pylist()`` makes one ``bytes`` object per row instead of 8,192 Python ints). The trainer reads
``messages`` (a one-message chat naming the row: ``[{"role": "user", "content": "sftpack row K"}]``) and
``metadata`` (``{"row": K, "build": name}``); provenance columns say which source conversations each row holds.

Format versions (schema metadata ``sftpack.format``): ``1`` wrote ``messages`` as the plain string
``"sftpack row K"``; ``2`` writes it as a chat list, because slime and miles require a list prompt when
``--hf-checkpoint`` ships a processor (Qwen3.5, Gemma 4 and Kimi K2.x do). Rows and ``rows_sha256`` are the
same in both; every reader accepts both and refuses a newer version.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.base.errors import UsageError
from sftpack.rows.model import META_BUILD, META_FORMAT, META_ROW_TOKENS, NotSftpackRows, check_format_version
from sftpack.rows.reader import RowsReader
from sftpack.rows.validation import duplicated_columns

FORMAT_VERSION = "2"

MESSAGE = pa.struct([pa.field("role", pa.string()), pa.field("content", pa.string())])

SCHEMA = pa.schema(
    [
        pa.field("tokens", pa.binary()),  # row_tokens x int32, little-endian
        pa.field("loss_mask", pa.binary()),  # row_tokens x uint8 (0/1)
        pa.field("messages", pa.list_(MESSAGE)),  # what slime's --input-key reads: [{"role": "user", "content": "sftpack row K"}]
        pa.field("metadata", pa.struct([pa.field("row", pa.int64()), pa.field("build", pa.string())])),
        pa.field("supervised_tokens", pa.int32()),
        pa.field("conversation_ids", pa.list_(pa.string())),  # source ids, in row order
        pa.field("conversation_starts", pa.list_(pa.int32())),  # where each one's tokens start in the row
        pa.field("conversation_lengths", pa.list_(pa.int32())),  # how many of its tokens the row holds
        pa.field("conversation_offsets", pa.list_(pa.int32())),  # index of its first token here within it (>0: continued)
    ]
)
PROVENANCE_COLUMNS = ["conversation_ids", "conversation_starts", "conversation_lengths", "conversation_offsets"]


def row_prompt(row: int) -> list[dict]:
    """The ``messages`` value of row ``row``: a one-message chat that only names the row.

    >>> row_prompt(17)
    [{'role': 'user', 'content': 'sftpack row 17'}]
    """
    return [{"role": "user", "content": f"sftpack row {row}"}]


def open_rows(path: str | Path) -> pq.ParquetFile:
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:
        raise NotSftpackRows(f"{path}: not a parquet file ({e})") from None
    check_format_version(format_of(pf), path)
    names = pf.schema_arrow.names
    twice = duplicated_columns(names)
    if twice:  # a reader asking for such a column by name cannot know which one it gets
        raise NotSftpackRows(f"{path}: not sftpack rows (column {', '.join(map(repr, twice))} appears more than once)")
    if "tokens" not in names or "loss_mask" not in names or any(pf.schema_arrow.field(c).type != pa.binary()
                                                                for c in ("tokens", "loss_mask")):
        raise NotSftpackRows(f"{path}: not sftpack rows (needs binary `tokens` and `loss_mask` columns)")
    return pf


def format_of(pf: pq.ParquetFile) -> str:
    """The file's format version (``"1"`` for files that predate the ``sftpack.format`` key)."""
    value = (pf.schema_arrow.metadata or {}).get(META_FORMAT.encode(), b"1")
    return value.decode("utf-8", "replace")


def row_tokens_of(pf: pq.ParquetFile) -> int:
    meta = pf.schema_arrow.metadata or {}
    value = meta.get(META_ROW_TOKENS.encode())
    if value is None:
        raise NotSftpackRows(f"parquet has no {META_ROW_TOKENS} metadata")
    return int(value)


def _binary_matrix(array: pa.Array, width: int, dtype, what: str, path, first_row: int) -> np.ndarray:
    """A binary column whose values all have ``width`` bytes, as a 2-D numpy view (no per-row copies)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if array.null_count:
        row = first_row + int(np.flatnonzero(~array.is_valid().to_numpy(zero_copy_only=False))[0])
        raise NotSftpackRows(f"{path}: row {row}: `{what}` is null")
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array) + 1]
    wrong = np.flatnonzero(np.diff(offsets) != width)
    if len(wrong):
        raise NotSftpackRows(f"{path}: row {first_row + int(wrong[0])}: `{what}` holds "
                             f"{int(offsets[wrong[0] + 1] - offsets[wrong[0]])} bytes, not {width}")
    data = array.buffers()[2]
    start = int(offsets[0]) if len(array) else 0
    flat = np.frombuffer(data, dtype=np.uint8)[start : start + width * len(array)]
    return flat.view(dtype).reshape(len(array), width // np.dtype(dtype).itemsize)


class ParquetRows(RowsReader):
    """The parquet rows format's reader (:data:`sftpack.rows.formats.ROW_FORMATS`): row groups are parquet row
    groups; each thread decodes through its own ``ParquetFile`` (one is not shared between threads)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.file = open_rows(path)
        meta = self.file.schema_arrow.metadata or {}
        self.row_tokens = row_tokens_of(self.file)
        self.build_name = meta.get(META_BUILD.encode(), b"").decode("utf-8", "replace") or None
        md = self.file.metadata
        sizes = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
        self.group_bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.has_provenance = all(c in self.file.schema_arrow.names for c in PROVENANCE_COLUMNS)
        self._local = threading.local()
        self._local.pf = self.file

    def _pf(self) -> pq.ParquetFile:
        pf = getattr(self._local, "pf", None)
        if pf is None:
            pf = self._local.pf = pq.ParquetFile(self.path)
        return pf

    def read_group(self, group: int) -> tuple[np.ndarray, np.ndarray]:
        table = self._pf().read_row_group(group, columns=["tokens", "loss_mask"], use_threads=False)
        first = int(self.group_bounds[group])
        return (_binary_matrix(table.column("tokens"), 4 * self.row_tokens, "<i4", "tokens", self.path, first),
                _binary_matrix(table.column("loss_mask"), self.row_tokens, np.uint8, "loss_mask", self.path, first))

    def read_masks(self, group: int) -> np.ndarray:
        table = self._pf().read_row_group(group, columns=["loss_mask"], use_threads=False)
        return _binary_matrix(table.column("loss_mask"), self.row_tokens, np.uint8, "loss_mask", self.path,
                              int(self.group_bounds[group]))

    def read_provenance_group(self, group: int) -> list[tuple]:
        if not self.has_provenance:  # files written before provenance existed
            missing = [c for c in PROVENANCE_COLUMNS if c not in self.file.schema_arrow.names]
            raise NotSftpackRows(f"{self.path}: no provenance columns ({', '.join(missing)} missing)")
        table = self._pf().read_row_group(group, columns=PROVENANCE_COLUMNS)
        columns = [table.column(c).to_pylist() for c in PROVENANCE_COLUMNS]
        return [tuple(v or [] for v in values) for values in zip(*columns)]

    def stored_supervised_per_row(self) -> np.ndarray | None:
        if "supervised_tokens" not in self.file.schema_arrow.names:  # files that predate the column
            return None
        column = self.file.read(columns=["supervised_tokens"]).column("supervised_tokens")
        return column.to_numpy().astype(np.int64)


