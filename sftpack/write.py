"""Write rows to parquet deterministically and atomically, and the build record next to it (README "Packing and hash specification", item 8).

Files are written under temporary names in the output directory and renamed at the end - parquet first,
build record last - so a killed build never leaves a final name behind. A lock file keeps two builds from
writing the same outputs at once.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import signal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import UsageError
from .pack import Row
from .rows import FORMAT_VERSION, SCHEMA, file_sha256, row_prompt

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


class OutputFiles:
    """``OUT/NAME.parquet`` and ``OUT/NAME.build.yaml``: lock, temporaries, refuse-or-overwrite, rename."""

    def __init__(self, out_dir: str | Path, name: str, overwrite: bool = False):
        self.dir = Path(out_dir)
        self.name = name
        self.parquet = self.dir / f"{name}.parquet"
        self.record = self.dir / f"{name}.build.yaml"
        self.tmp_parquet = self.dir / f".{name}.parquet.tmp"
        self.tmp_record = self.dir / f".{name}.build.yaml.tmp"
        self.overwrite = overwrite
        self._lock = None

    def __enter__(self) -> "OutputFiles":
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            lock = open(self.dir / f".{self.name}.lock", "w")
        except OSError as e:
            raise UsageError(f"--out {self.dir}: cannot write there ({e.strerror})") from e
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            lock.close()
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise UsageError(f"--out {self.dir}: another sftpack build is writing {self.name} there") from e
            raise
        self._lock = lock
        existing = [p.name for p in (self.parquet, self.record) if p.exists()]
        if existing and not self.overwrite:
            self._release()
            raise UsageError(f"--out {self.dir}: {', '.join(existing)} already exist(s); pass --overwrite to replace")
        self.remove_temporaries()  # left by a killed build
        return self

    def remove_temporaries(self) -> None:
        for p in (self.tmp_parquet, self.tmp_record):
            if p.exists():
                p.unlink()

    def commit(self, record) -> None:
        """Rename the parquet into place, then write and rename the build record (a :class:`~sftpack.record.BuildRecord`)."""
        with open(self.tmp_record, "w", encoding="utf-8") as f:
            f.write(record.to_yaml())
            f.flush()
            os.fsync(f.fileno())
        # No Ctrl-C/SIGTERM between the two renames: the parquet must never be left without its record.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            if self.overwrite and self.record.exists():
                self.record.unlink()  # an old record must never describe the new parquet
            os.replace(self.tmp_parquet, self.parquet)
            os.replace(self.tmp_record, self.record)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __exit__(self, *exc) -> None:
        self.remove_temporaries()
        self._release()


class RowWriter:
    """Streams rows into a parquet file, hashing them (``rows_sha256``) on the way."""

    def __init__(self, path: Path, row_tokens: int, build_name: str):
        self.path = path
        self.build_name = build_name
        schema = SCHEMA.with_metadata(
            {"sftpack.format": FORMAT_VERSION, "sftpack.row_tokens": str(row_tokens), "sftpack.build": build_name}
        )
        self._writer = pq.ParquetWriter(str(path), schema, **WRITER_OPTIONS)
        self._schema = schema
        self._pending: list[Row] = []
        self.rows = 0
        self.supervised = 0
        self._hash = hashlib.sha256()

    def write(self, row: Row) -> None:
        tokens = row.tokens.astype("<i4", copy=False).tobytes()
        mask = row.loss_mask.tobytes()
        self._hash.update(tokens)
        self._hash.update(mask)
        self._pending.append((tokens, mask, row))
        self.rows += 1
        self.supervised += row.supervised
        if len(self._pending) == ROWS_PER_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        first = self.rows - len(self._pending)
        rows = [r for _, _, r in self._pending]
        columns = {
            "tokens": pa.array([t for t, _, _ in self._pending], pa.binary()),
            "loss_mask": pa.array([m for _, m, _ in self._pending], pa.binary()),
            "messages": pa.array([row_prompt(first + i) for i in range(len(rows))], SCHEMA.field("messages").type),
            "metadata": pa.array([{"row": first + i, "build": self.build_name} for i in range(len(rows))], SCHEMA.field("metadata").type),
            "supervised_tokens": pa.array([r.supervised for r in rows], pa.int32()),
            "conversation_ids": pa.array([[p.conversation for p in r.pieces] for r in rows], pa.list_(pa.string())),
            "conversation_starts": pa.array([[p.start for p in r.pieces] for r in rows], pa.list_(pa.int32())),
            "conversation_lengths": pa.array([[p.length for p in r.pieces] for r in rows], pa.list_(pa.int32())),
            "conversation_offsets": pa.array([[p.offset for p in r.pieces] for r in rows], pa.list_(pa.int32())),
        }
        self._writer.write_table(pa.table(columns, schema=self._schema), row_group_size=ROWS_PER_GROUP)
        self._pending = []

    @property
    def rows_sha256(self) -> str:
        return self._hash.hexdigest()

    def close(self) -> tuple[str, int]:
        """Finish the file; its (sha256, size in bytes)."""
        self._flush()
        self._writer.close()
        with open(self.path, "rb+") as f:
            os.fsync(f.fileno())
        return file_sha256(self.path)
