"""Arrow-table sources: ``.parquet`` (in memory, or through sftpack's cache when large), ``.arrow``
(memory-mapped) and the pinned Tulu 3 mixture from the hub."""

from __future__ import annotations

import mmap
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.base.bundled import SAMPLE_PATH
from sftpack.base.errors import UsageError
from sftpack.sources.base import RowError, Source, SourceChanged, SourceInfo, generated_id, source_id
from sftpack.sources.huggingface import load_hub
from sftpack.sources.parquet_cache import arrow_copy
from sftpack.sources.pins import TULU_REPO
from sftpack.sources.sharegpt import COLUMN, TOOL_ROLES, missing_column, sharegpt_table, sharegpt_tools, tool_turns

# Parquet sources above this size are decoded once into sftpack's cache and memory-mapped from there instead of being
# read into memory by every build (the full Tulu 3 mixture is ~2.9 GB of Arrow; sftpack.sources.parquet_cache).
IN_MEMORY_PARQUET_BYTES = 256 << 20


class TableSource(Source):
    """An Arrow table, in memory or memory-mapped."""

    def __init__(self, table: pa.Table, info: SourceInfo, maps: list | None = None):
        if info.shape == "sharegpt":
            table = sharegpt_table(table, info.dataset)
        if "messages" not in table.column_names:
            raise UsageError(missing_column(info.dataset, table.column_names, sharegpt=False))
        if COLUMN in table.column_names:  # (sharegpt_table refuses the same with --sharegpt)
            raise UsageError(f"source {info.dataset}: it has both `messages` and `{COLUMN}`, two conversation shapes: "
                             "keep one of them")
        self.info = info
        # the conversations' tools (a list or a JSON string per row): one contiguous array, read a row at a time
        tools = table.column("tools") if "tools" in table.column_names else None
        self._tools = None if tools is None else (tools.combine_chunks() if tools.num_chunks != 1 else tools.chunk(0))
        table = _plain_columns(table, info)
        # Memory maps behind the table: their pages are released whenever the process's RSS passes
        # RELEASE_ABOVE_BYTES, so reading 65k random rows of a 3 GB source does not leave the whole file in RSS.
        self._maps = maps or []
        self.columns = [table.column("messages").chunks]
        if "id" in table.column_names:
            self.columns.append(table.column("id").chunks)
        self._n = table.num_rows
        sizes = [len(c) for c in self.columns[0]]
        self._bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        for chunks in self.columns[1:]:  # the id column may be chunked differently: align it
            if [len(c) for c in chunks] != sizes:
                self.columns = [table.combine_chunks().column(k).chunks for k in ("messages", "id")]
                self._bounds = np.array([0, self._n], dtype=np.int64)
                break
        self._readers: dict = {}

    def __len__(self) -> int:
        return self._n

    @property
    def memory_mapped(self) -> bool:
        return bool(self._maps)

    def changed(self) -> str | None:
        for mapped in self._maps:
            why = mapped.changed()
            if why:
                return why
        return None

    def take(self, indices) -> list[tuple[str, object]]:
        why = self.changed()  # checked before touching the maps: reading past a cut-short file is a SIGBUS
        if why:
            raise SourceChanged(why)
        # Chunk by chunk: ChunkedArray.take would first concatenate every chunk of a memory-mapped source
        # (gigabytes) to pick a hundred rows. Chunks in Tulu's plain layout are read straight from the Arrow
        # buffers (zero-copy views), the rest through pyarrow's take + to_pylist.
        indices = np.asarray(indices, dtype=np.int64)
        chunk_of = np.searchsorted(self._bounds, indices, side="right") - 1
        local = indices - self._bounds[chunk_of]
        out: list = [None] * len(indices)
        slow: dict[int, list[int]] = {}
        for position, (chunk, row) in enumerate(zip(chunk_of.tolist(), local.tolist())):
            reader = self._readers.get(chunk)
            if reader is None:
                reader = self._readers[chunk] = _ChunkReader.make(self.columns, chunk)
            if reader is False:
                slow.setdefault(chunk, []).append(position)
            else:
                try:
                    out[position] = reader.row(row)
                except UnicodeDecodeError:
                    out[position] = _NOT_UTF8
        for chunk, positions in slow.items():
            try:
                got = self._take_slow(chunk, local[positions])
            except UnicodeDecodeError:  # a string that is not UTF-8 (writers that do not validate): find its row
                got = []
                for row in local[positions]:
                    try:
                        got += self._take_slow(chunk, [row])
                    except UnicodeDecodeError:
                        got.append(_NOT_UTF8)
            for position, pair in zip(positions, got):
                out[position] = pair
        if self._maps and _resident_bytes() > RELEASE_ABOVE_BYTES:
            for mapped in self._maps:
                mapped.release()
        rows = [_table_row(pair, k) for pair, k in zip(out, indices.tolist())]
        if self._tools is not None or self.info.shape == "sharegpt":
            rows = [row if isinstance(row, RowError) else self._whole(row, k) for row, k in zip(rows, indices.tolist())]
        return rows

    def _whole(self, row: tuple, k: int) -> tuple:
        """A row with its tools, and ShareGPT's tool turns read as tool calls and results."""
        rid, messages = row
        sharegpt = self.info.shape == "sharegpt"
        if sharegpt and isinstance(messages, list) and any(isinstance(m, dict) and m.get("role") in TOOL_ROLES
                                                             for m in messages):
            messages = tool_turns(messages)
        tools = None if self._tools is None else self._tools[k].as_py()
        if tools is None:
            return rid, messages
        return rid, {"messages": messages, "tools": sharegpt_tools(tools) if sharegpt else tools}

    def _take_slow(self, chunk: int, rows) -> list[tuple]:
        rows = pa.array(rows, pa.int64())
        got = self.columns[0][chunk].take(rows).to_pylist()
        got_ids = self.columns[1][chunk].take(rows).to_pylist() if len(self.columns) > 1 else [None] * len(rows)
        return list(zip(got_ids, got))


def _table_row(pair, k: int):
    if pair is _NOT_UTF8:
        return RowError("invalid_unicode", f"row {k}: a string is not valid UTF-8", generated_id(k))
    rid = source_id(pair[0], k)
    return rid if isinstance(rid, RowError) else (rid, pair[1])


def _needs_plain(t: pa.DataType) -> bool:
    """Whether ``t`` holds view types (Polars writes them), which the readers do not take."""
    if t in _VIEW_TYPES or _is_list_view(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _needs_plain(t.value_type)
    if pa.types.is_struct(t):
        return any(_needs_plain(t.field(i).type) for i in range(t.num_fields))
    return False


_VIEW_TYPES = {f() for f in (getattr(pa, "string_view", None), getattr(pa, "binary_view", None)) if f}


def _is_list_view(t: pa.DataType) -> bool:
    return any(getattr(pa.types, f, lambda t: False)(t) for f in ("is_list_view", "is_large_list_view"))


def _plain_array(array: pa.Array) -> pa.Array:
    """``array`` with views replaced by plain arrays: string/binary views by large strings/binaries, list views
    by lists (rebuilt here: pyarrow's own list-view cast can leave the last offset out)."""
    t = array.type
    mask = array.is_null() if array.null_count else None
    if t in _VIEW_TYPES:
        return array.cast(pa.large_string() if t == pa.string_view() else pa.large_binary())
    if _is_list_view(t):
        sizes = np.where(array.is_null().to_numpy(zero_copy_only=False), 0, array.sizes.to_numpy(zero_copy_only=False))
        offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        bounds = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
        gather = np.repeat(offsets - bounds[:-1], sizes) + np.arange(bounds[-1])  # each list's values, in order
        values = _plain_array(array.values).take(pa.array(gather, pa.int64()))  # (views have no take kernel)
        large = pa.types.is_large_list_view(t)
        cls, width = (pa.LargeListArray, pa.int64()) if large else (pa.ListArray, pa.int32())
        return cls.from_arrays(pa.array(bounds, width), values, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(array.offsets, _plain_array(array.values), mask=mask)
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        children = [_plain_array(array.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=[f.with_type(c.type) for f, c in zip(fields, children)], mask=mask)
    return array


def _plain_columns(table: pa.Table, info: SourceInfo) -> pa.Table:
    for name in ("messages", "id"):
        if name not in table.column_names or not _needs_plain(table.schema.field(name).type):
            continue
        kind = table.schema.field(name).type
        try:
            chunks = [_plain_array(c) for c in table.column(name).chunks]
            column = pa.chunked_array(chunks) if chunks else table.column(name).cast(pa.large_string())
            table = table.set_column(table.column_names.index(name), name, column)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise UsageError(f"source {info.dataset}: column `{name}` has type {kind}, which sftpack cannot read "
                             f"({str(e).splitlines()[0]})") from None
    return table


def _string_views(array: pa.Array):
    """(offsets, data) of a string array as zero-copy numpy views; None if it has nulls or another type."""
    if array.null_count or not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return None
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=width)[array.offset : array.offset + len(array) + 1]
    data = memoryview(buffers[2]) if buffers[2] is not None else memoryview(b"")
    return offsets, data


RELEASE_ABOVE_BYTES = 768 << 20  # hand mapped source pages back once the process holds this much


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return RELEASE_ABOVE_BYTES + 1  # unknown: release every time (correct, a little slower)


class _MappedFile:
    """A read-only memory map whose pages the reader can hand back to the kernel (see ``TableSource.take``)."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "rb")
        self.size = os.fstat(self._file.fileno()).st_size
        self.map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)

    def changed(self) -> str | None:
        now = os.fstat(self._file.fileno()).st_size
        if now < self.size:
            return (f"source file {self.path} changed while being read ({self.size:,} bytes when opened, {now:,} now)")
        return None

    def release(self) -> None:
        if hasattr(mmap, "MADV_DONTNEED"):
            self.map.madvise(mmap.MADV_DONTNEED)  # drops the pages from our RSS; they stay in the page cache


def read_arrow(path: Path) -> tuple[pa.Table, _MappedFile]:
    """An Arrow IPC file (or stream: the `datasets` cache format) as a zero-copy table over a memory map."""
    mapped = _MappedFile(path)
    buffer = pa.py_buffer(mapped.map)
    try:
        table = pa.ipc.open_file(pa.BufferReader(buffer)).read_all()
    except pa.ArrowInvalid:
        table = pa.ipc.open_stream(pa.BufferReader(buffer)).read_all()
    return table, mapped


def read_arrow_files(paths: list) -> TableSource:
    tables, maps = zip(*(read_arrow(Path(p)) for p in paths))
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    return table, list(maps)


_SAMPLE: list = []  # the bundled sample's table, read once per process (Arrow tables never change)


def sample_table() -> pa.Table:
    if not _SAMPLE:
        _SAMPLE.append(read_parquet(SAMPLE_PATH))
    return _SAMPLE[0]


def read_parquet(path: Path) -> pa.Table:
    """A parquet file's table: through ``ParquetFile``, since ``pq.read_table`` imports ``pyarrow.dataset``, and with
    it pandas (0.3-2 s of a build's start-up on 2 cores)."""
    return pq.ParquetFile(path).read()


def open_parquet(paths: list[Path], info: SourceInfo) -> Source:
    if sum(p.stat().st_size for p in paths) <= IN_MEMORY_PARQUET_BYTES:
        tables = [read_parquet(p) for p in paths]
        return TableSource(pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0], info)
    copies = [arrow_copy(p) for p in paths]
    if None in copies:  # a cache that cannot be written: read into memory
        return TableSource(pa.concat_tables([read_parquet(p) for p in paths], promote_options="default"), info)
    table, maps = read_arrow_files(copies)
    return TableSource(table, info, maps)


@contextmanager
def quiet_datasets():
    """No `datasets` progress bars while sftpack loads a source (sftpack draws its own); restored afterwards."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()


def open_hub(revision: str) -> Source:
    from sftpack.base import hub

    if not hub.hub_reachable():
        raise UsageError(
            f"--source hub: cannot reach the Hugging Face hub to load {TULU_REPO}@{revision}; use --source PATH (a "
            "local copy of it at that revision, in Tulu's schema), or --source sample (rows named as the sample's)"
        )
    from sftpack.sources.huggingface import resolve_revision

    commit = resolve_revision(TULU_REPO, revision)  # the hub's answer, checked to be a commit id
    if hub.is_commit(revision) and commit != revision:
        raise UsageError(f"--source hub: the hub answered the commit {commit} for {TULU_REPO}@{revision}; refusing "
                         "rows from another revision than the one asked for")
    with quiet_datasets():
        files = load_hub(TULU_REPO, commit, label="--source hub")
    table, maps = read_arrow_files(files)
    return TableSource(table, SourceInfo(TULU_REPO, "hub", commit), maps)


class _ChunkReader:
    """Rows of one chunk of ``messages: list<struct<string fields>>`` (+ ``id: string``) without nulls, read
    from the Arrow buffers: ~100x cheaper per row than ``take().to_pylist()`` on random rows."""

    @staticmethod
    def make(columns, chunk: int):
        messages = columns[0][chunk]
        if not pa.types.is_list(messages.type) or not pa.types.is_struct(messages.type.value_type) or messages.null_count:
            return False
        struct = messages.values
        if struct.null_count:
            return False
        fields = []
        for i in range(struct.type.num_fields):
            views = _string_views(struct.field(i))
            if views is None:
                return False
            fields.append((struct.type.field(i).name, *views))
        ids = None
        if len(columns) > 1:
            ids = _string_views(columns[1][chunk])
            if ids is None:
                return False
        list_offsets = np.frombuffer(messages.buffers()[1], dtype=np.int32)[messages.offset : messages.offset + len(messages) + 1]
        return _ChunkReader(list_offsets, fields, ids)

    def __init__(self, list_offsets, fields, ids):
        # offsets as memoryviews: a slice's tolist() costs less than a numpy slice's (a row in 15.4 µs, not 17.2)
        self.list_offsets = _ints(list_offsets)
        self.fields = [(name, _ints(offsets), data) for name, offsets, data in fields]
        self.ids = None if ids is None else (_ints(ids[0]), ids[1])
        self.names = tuple(name for name, _, _ in fields)

    def row(self, k: int):
        first, last = self.list_offsets[k], self.list_offsets[k + 1]
        columns = []
        for _, offsets, data in self.fields:
            bounds = offsets[first : last + 1].tolist()
            columns.append([str(data[a:b], "utf-8") for a, b in zip(bounds, bounds[1:])])
        # Tulu's role and content as a dict display, not dict(zip()): about 9% off reading a row
        if len(columns) == 2:
            first_name, second_name = self.names
            messages = [{first_name: a, second_name: b} for a, b in zip(*columns)]
        else:
            names = self.names
            messages = [dict(zip(names, values)) for values in zip(*columns)]
        row_id = None
        if self.ids is not None:
            offsets, data = self.ids
            row_id = str(data[offsets[k] : offsets[k + 1]], "utf-8")
        return row_id, messages


def _ints(values: np.ndarray) -> memoryview:
    """A contiguous int32 or int64 array as a memoryview of Python ints."""
    return memoryview(np.ascontiguousarray(values)).cast("B").cast("q" if values.dtype == np.int64 else "i")


_NOT_UTF8 = object()
