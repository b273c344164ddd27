"""A large parquet file decoded once into an Arrow file in sftpack's cache (:func:`sftpack.base.cache.cache_dir`,
``sources/``), then memory-mapped by every build that reads it: a build opens it without reading it (the pages its
rows need come in as its workers read them, shared through the page cache), where reading the parquet took every
build its whole decode before the first chunk (or, through ``datasets``' cache, importing ``datasets`` and checking
its cache: 1.8 s on 2 cores).

An entry is named by the parquet file's resolved path, size, modification time and inode, and the pyarrow version
that wrote it: a file changed in any of these is decoded again. It is written beside its final name and renamed into
place, and checked when opened: its size is the one recorded, its footer reads, and it holds the parquet file's
rows; anything else is decoded again. Where the cache cannot be written, None: the caller reads the parquet itself."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.base.cache import cache_dir

FORMAT = 1
BATCH_ROWS = 4096  # rows per record batch written


def entry_for(path: Path) -> Path:
    """Where ``path``'s Arrow copy is kept."""
    stat = path.stat()
    key = json.dumps({"format": FORMAT, "pyarrow": pa.__version__, "path": str(path.resolve()), "size": stat.st_size,
                      "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino})
    return cache_dir() / "sources" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.arrow"


def arrow_copy(path: Path) -> Path | None:
    """The cached Arrow copy of the parquet file ``path``, decoded now when missing or damaged; None when the cache
    cannot be written."""
    entry = entry_for(path)
    rows = pq.ParquetFile(path).metadata.num_rows
    if _whole(entry, rows):
        return entry
    staging = entry.with_name(f".{entry.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        parquet = pq.ParquetFile(path)
        with pa.OSFile(str(staging), "wb") as sink, pa.ipc.new_file(sink, parquet.schema_arrow) as writer:
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
                writer.write_batch(batch)
        entry.with_suffix(".size").write_text(str(staging.stat().st_size))
        os.replace(staging, entry)
    except OSError:
        staging.unlink(missing_ok=True)
        return None
    return entry if _whole(entry, rows) else None


def _whole(entry: Path, rows: int) -> bool:
    try:
        if entry.stat().st_size != int(entry.with_suffix(".size").read_text()):
            return False
        with pa.memory_map(str(entry)) as source:
            return pa.ipc.open_file(source).read_all().num_rows == rows  # zero-copy: only the batches' headers read
    except (OSError, ValueError, pa.ArrowException):
        return False
