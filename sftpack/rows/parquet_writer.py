"""The parquet rows format's writer: rows streamed into row groups written in parallel parts
(:mod:`sftpack.rows.parts`) and hashed (``rows_sha256``) on the writer's own thread."""

from __future__ import annotations

import hashlib
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from sftpack.base.signals import signals_held
from sftpack.rows.hashing import update_rows_sha256
from sftpack.rows.model import META_BUILD, META_FORMAT, META_ROW_TOKENS, Pieces, Row
from sftpack.rows.parquet import FORMAT_VERSION, MESSAGE, SCHEMA, row_prompt
from sftpack.rows.parts import Stitcher, part
from sftpack.rows.durable import DurableFile
from sftpack.rows.writer import RowsWriter

SWITCH_INTERVAL_S = 0.0005  # while the writer thread runs (see RowWriter._flush)


ROWS_PER_GROUP = 64  # ~2.6 MB of tokens per row group at 8,192 tokens: the trainer reads a batch in a few groups


# Fixed writer options: the file's bytes depend only on the rows and the pyarrow version.
WRITER_OPTIONS = dict(
    compression="zstd",
    compression_level=3,
    use_dictionary=["messages.list.element.role", "metadata.build"],
    write_statistics=False,
    version="2.6",
    data_page_version="1.0",
)


class RowWriter(RowsWriter):
    """The parquet rows format's writer (:data:`sftpack.rows.formats.ROW_FORMATS`): streams rows into a parquet
    file, hashing them (``rows_sha256``) on the way on its own thread (so the build's
    :class:`~sftpack.rows.writer.RowSink` takes its hash instead of hashing again).

    The caller's thread only collects rows. ``COMPRESSORS`` threads gather row groups into Arrow arrays, encode and
    compress them in parallel, each into a standalone in-memory parquet file (pyarrow and zstd run without the
    GIL); one writer thread takes them strictly in order, hashes the rows, appends the row-group bytes to the
    file (:mod:`sftpack.rows.parts`: the same bytes one ``ParquetWriter`` would write) and hashes the file's
    bytes as they go out. The threads start with the first full group: by then the build's worker processes are
    forked, so no fork ever copies a thread that might hold a lock."""

    QUEUED_GROUPS = 12  # bounded: the caller waits rather than buffering the whole output
    # with 3, a 16-worker build's writer waited 13-14 s of an 18 s loop for compressed groups; 6 build it ~5% faster
    COMPRESSORS = 6

    hashes_rows = True

    def __init__(self, path: Path, row_tokens: int, build_name: str):
        super().__init__(path, row_tokens, build_name)
        schema = SCHEMA.with_metadata({META_FORMAT: FORMAT_VERSION, META_ROW_TOKENS: str(row_tokens), META_BUILD: build_name})
        self._schema = schema
        self._file = DurableFile(path)
        self._stitcher = Stitcher(self._file, schema, WRITER_OPTIONS)
        self._pending: list[Row] = []
        self.rows = 0
        self.supervised = 0
        self._hash = hashlib.sha256()
        self._queue: queue.Queue = queue.Queue(max(self.QUEUED_GROUPS, 2 * self.COMPRESSORS))
        self._thread: threading.Thread | None = None
        self._compressors: ThreadPoolExecutor | None = None
        self._error: BaseException | None = None
        self.timings = {"gather_s": 0.0, "wait_s": 0.0, "compress_s": 0.0, "write_s": 0.0, "hash_s": 0.0,
                        "part_wait_s": 0.0, "drain_s": 0.0, "sync_s": 0.0}

    def write(self, row: Row) -> None:
        self._pending.append(row)
        self.rows += 1
        self.supervised += row.supervised
        if len(self._pending) == ROWS_PER_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        first = self.rows - len(self._pending)
        rows = self._pending
        self._pending = []
        with signals_held():  # the writer's thread and the compressors' start here
            if self._thread is None:
                # The GIL passes to a waiting thread only every switch interval (5 ms by default): the writer, which
                # needs it for a moment between GIL-free calls, would otherwise idle behind the packing thread.
                self._switch_interval = sys.getswitchinterval()
                sys.setswitchinterval(min(self._switch_interval, SWITCH_INTERVAL_S))
                self._compressors = ThreadPoolExecutor(self.COMPRESSORS, thread_name_prefix="sftpack-compress")
                self._thread = threading.Thread(target=self._run, name="sftpack-writer", daemon=True)
                self._thread.start()
            future = self._compressors.submit(self._compress, rows, first)
        t = time.perf_counter()
        self._queue.put(future)
        self.timings["wait_s"] += time.perf_counter() - t
        self._raise_if_failed()

    def _gather(self, rows: list[Row], first: int) -> tuple[np.ndarray, np.ndarray, pa.Table]:
        """A row group as one Arrow table (and its token and mask matrices, for the hash). On a compressor thread:
        at 16 workers it took the packing thread, the build's serial part, 4.5 s of a 30 s build."""
        n, width = len(rows), self.row_tokens
        # one contiguous buffer per column, shared zero-copy with Arrow (no bytes object per row)
        tokens = np.stack([r.tokens for r in rows]).astype("<i4", copy=False)
        masks = np.stack([r.loss_mask for r in rows])
        pieces = [Pieces.of(r.pieces) for r in rows]  # the packer's rows have them as arrays already
        per_row = np.fromiter(map(len, pieces), dtype=np.int32, count=n)
        ids = [conversation for p in pieces for conversation in p.ids]
        starts, lengths, offsets = (np.concatenate([getattr(p, f) for p in pieces]).astype(np.int32)
                                    for f in ("starts", "lengths", "offsets"))
        # Arrays from buffers, not pa.array(): that one imports pandas on first use (a second or more of start-up)
        columns = {
            "tokens": _fixed_binary(tokens, n, width * 4),
            "loss_mask": _fixed_binary(masks, n, width),
            "messages": _chats([row_prompt(first + i) for i in range(n)]),
            "metadata": pa.StructArray.from_arrays(
                [_numbers(np.arange(first, first + n, dtype=np.int64)), _strings([self.build_name] * n)],
                fields=list(SCHEMA.field("metadata").type)),
            "supervised_tokens": _numbers(np.fromiter((r.supervised for r in rows), dtype=np.int32, count=n)),
            "conversation_ids": _lists(per_row, _strings(ids)),
            "conversation_starts": _lists(per_row, _numbers(starts)),
            "conversation_lengths": _lists(per_row, _numbers(lengths)),
            "conversation_offsets": _lists(per_row, _numbers(offsets)),
        }
        return tokens, masks, pa.table(columns, schema=self._schema)

    def _run(self) -> None:
        while True:
            group = self._queue.get()
            if group is None:
                return
            if self._error is not None:
                continue  # keep draining, so that the caller never blocks on a full queue
            try:
                self._write_group(group)
            except BaseException as e:  # handed to the caller's thread, which raises it
                self._error = e

    def _compress(self, rows: list[Row], first: int) -> tuple[pa.Buffer, np.ndarray, np.ndarray]:
        t = time.perf_counter()
        tokens, masks, table = self._gather(rows, first)
        g = time.perf_counter()
        data = part(table, self._schema, WRITER_OPTIONS)
        self.timings["gather_s"] += g - t  # both summed over the compressor threads
        self.timings["compress_s"] += time.perf_counter() - g
        return data, tokens, masks

    def _write_group(self, compressed) -> None:
        t = time.perf_counter()
        data, tokens, masks = compressed.result()
        h = time.perf_counter()
        update_rows_sha256(self._hash, tokens, masks)  # one group: one interleave, one hash call
        w = time.perf_counter()
        self._stitcher.add(data)
        self._file.advance()
        self.timings["part_wait_s"] += h - t
        self.timings["hash_s"] += w - h
        self.timings["write_s"] += time.perf_counter() - w

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _stop_thread(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
            self._compressors.shutdown(cancel_futures=True)
            self._compressors = None
            sys.setswitchinterval(self._switch_interval)  # the process's setting, as it was

    @property
    def rows_sha256(self) -> str:
        return self._hash.hexdigest()

    def abort(self) -> None:
        """Stop the background thread and release the file (a failed or interrupted build)."""
        try:
            self._stop_thread()
        finally:
            self._error = None
            self._file.abort()

    def close(self) -> tuple[str, int]:
        """Finish the file; its (sha256, size in bytes)."""
        t = time.perf_counter()
        try:
            self._flush()
        finally:
            self._stop_thread()
        self._raise_if_failed()
        self._stitcher.close()
        s = time.perf_counter()
        digest = self._file.finish()
        self.timings["drain_s"] = s - t  # the last row groups compressed and written, after the build's last row
        self.timings["sync_s"] = time.perf_counter() - s
        return digest


def _numbers(values: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _strings(values: list[str]) -> pa.Array:
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int32, count=len(encoded)), out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _chats(chats: list[list[dict]]) -> pa.Array:
    """``list<struct<role, content>>`` values (the ``messages`` column)."""
    per_row = np.fromiter(map(len, chats), dtype=np.int32, count=len(chats))
    flat = [m for chat in chats for m in chat]
    fields = list(MESSAGE)
    return _lists(per_row, pa.StructArray.from_arrays([_strings([m[f.name] for m in flat]) for f in fields], fields=fields))


def _lists(per_row: np.ndarray, values: pa.Array) -> pa.Array:
    offsets = np.zeros(len(per_row) + 1, dtype=np.int32)
    np.cumsum(per_row, out=offsets[1:])
    return pa.ListArray.from_arrays(_numbers(offsets), values)


def _fixed_binary(values: np.ndarray, n: int, width: int) -> pa.Array:
    """``n`` binary values of ``width`` bytes each over one contiguous buffer (``values``), without copying."""
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(values))])
