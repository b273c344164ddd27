"""Write rows to parquet deterministically and atomically, and the build record next to it (docs/spec.md, "Packing", item 8).

Files are written under temporary names in the output directory and renamed at the end - parquet first,
build record last - so a killed build never leaves a final name behind. A lock file keeps two builds from
writing the same outputs at once.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
from pathlib import Path

from sftpack.base.arguments import argument
from sftpack.base.errors import UsageError
from sftpack.builder import interrupts
from sftpack.builder.record import record_suffix


class OutputFiles:
    """``OUT/NAME.parquet`` and ``OUT/NAME.build.yaml``: lock, temporaries, refuse-or-overwrite, rename."""

    def __init__(self, out_dir: str | Path, name: str, overwrite: bool = False, suffix: str = ".parquet"):
        # suffix: the rows format's; `parquet` / `tmp_parquet` name the rows file whatever its format
        self.dir = Path(out_dir)
        self.name = name
        self.parquet = self.dir / f"{name}{suffix}"
        self.record = self.dir / f"{name}{record_suffix(suffix)}"
        self.tmp_parquet = self.dir / f".{name}{suffix}.tmp"
        self.tmp_record = self.dir / f".{self.record.name}.tmp"
        self.overwrite = overwrite
        self.lock_path = self.dir / f".{name}.lock"
        self._lock = None

    def __enter__(self) -> "OutputFiles":
        self.created = _missing_directories(self.dir)  # removed again if the build fails
        attempts = 0
        while True:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
                lock = open(self.lock_path, "a")
            except OSError as e:
                self._remove_created()
                raise UsageError(f"--out {self.dir}: cannot write there ({e.strerror})") from e
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                lock.close()
                attempts += 1
                if e.errno in (errno.EAGAIN, errno.EACCES) and attempts < 5:  # held for a moment by a cleanup
                    time.sleep(0.05)
                    continue
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    raise UsageError(f"--out {self.dir}: another sftpack build is writing {self.name} there") from e
                raise
            # The build that held the lock removes the file before it lets go: holding a lock on a file that no
            # longer has the name would not keep out a build that creates it anew. Then take the new one.
            try:
                if os.stat(self.lock_path).st_ino == os.fstat(lock.fileno()).st_ino:
                    break
            except FileNotFoundError:
                pass
            lock.close()
        self._lock = lock
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")  # for a person looking; liveness is the lock itself
        lock.flush()
        remove_dead_builds(self.dir, keep=self.lock_path)
        for p in (self.parquet, self.record, self.tmp_parquet, self.tmp_record):
            if p.exists() and not p.is_file():  # os.replace / unlink would fail on it at the very end
                self._release()
                raise UsageError(f"--out {self.dir}: {p.name} exists and is not a file; remove it or choose another --name")
        existing = [p.name for p in (self.parquet, self.record) if p.exists()]
        if existing and not self.overwrite:
            self._release()
            raise UsageError(f"{argument('out')} {self.dir}: {', '.join(existing)} already exist(s); pass "
                             f"{argument('overwrite', True)} to replace")
        self.remove_temporaries()  # left by a killed build
        return self

    def remove_temporaries(self) -> None:
        for p in (self.tmp_parquet, self.tmp_record):
            if p.exists():
                p.unlink()

    def commit(self, record) -> None:
        """Rename the parquet into place, then write and rename the build record (a
        :class:`~sftpack.builder.record.BuildRecord`; None: the rows file goes without one)."""
        if record is not None:
            with open(self.tmp_record, "w", encoding="utf-8") as f:
                f.write(record.to_yaml())
                f.flush()
                os.fsync(f.fileno())
        # No Ctrl-C/SIGTERM between the two renames: the parquet must never be left without its record. (Blocking
        # the signals in this thread would not do: another thread - the writer's, tqdm's - can take them and
        # Python still runs the handler here.) Once both are renamed, the build is done whatever arrives.
        with interrupts.deferred():
            interrupts.check()  # a signal recorded earlier is an interruption before the renames
            if self.overwrite and self.record.exists():
                self.record.unlink()  # an old record must never describe the new parquet
            os.replace(self.tmp_parquet, self.parquet)
            if record is not None:
                os.replace(self.tmp_record, self.record)
            interrupts.mark_done()
        _sync_directory(self.dir)  # the files are synced; their names are the directory's

    def _remove_created(self) -> None:
        """A failed build leaves no ``--out`` it created: the directories it made, innermost first, while empty."""
        for directory in reversed(self.created):
            try:
                directory.rmdir()
            except OSError:  # not empty (someone else's files), or gone: left as it is
                return

    def _release(self) -> None:
        if self._lock is not None:
            try:
                os.unlink(self.lock_path)  # no .NAME.lock left behind; removed while still held (see __enter__)
            except OSError:
                pass
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __exit__(self, exc_type, exc, tb) -> None:
        self.remove_temporaries()
        self._release()
        if exc_type is not None:
            self._remove_created()
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            # after the temporaries are gone, so that the free space reported is what the user really has
            raise UsageError(f"no space left on the device (--out {self.dir}: {_free(self.dir)} free once the "
                             "temporaries were removed); nothing written") from None


def _missing_directories(path: Path) -> list[Path]:
    """The directories ``mkdir(parents=True)`` would create for ``path``, outermost first."""
    missing = []
    for directory in [path, *path.parents]:
        if directory.exists():
            break
        missing.append(directory)
    return missing[::-1]


DEAD_AFTER_S = 30  # a lock file without a holder this old is a dead build's (a live one takes it at once)


def remove_dead_builds(directory: Path, keep: Path) -> None:
    """Remove what killed builds left in ``directory``: each ``.NAME.lock`` no process holds (a killed build's
    lock is released by the kernel with the process) and that build's temporaries ``.NAME.SUFFIX.tmp``, and such
    temporaries with no lock at all. A lock some build holds, and its temporaries, are left alone."""
    from sftpack.rows.formats import ROW_FORMATS

    suffixes = tuple(s for fmt in ROW_FORMATS.values() for s in (fmt.suffix, record_suffix(fmt.suffix)))
    held = {keep.name[1:-len(".lock")]}
    for lock_path in directory.glob(".*.lock"):
        if lock_path != keep and not _remove_if_dead(lock_path):
            held.add(lock_path.name[1:-len(".lock")])
    for temporary in directory.glob(".*.tmp"):
        inner = temporary.name[1:-len(".tmp")]
        ours = [inner[: -len(suffix)] for suffix in suffixes if inner.endswith(suffix)]
        if ours and not any(name in held for name in ours) and temporary.is_file():
            try:
                temporary.unlink()
            except OSError:
                pass


def _remove_if_dead(lock_path: Path) -> bool:
    """Remove ``lock_path`` if no process holds it and it is not a build's just-created lock; whether it went."""
    try:
        lock = open(lock_path, "r")  # never created here: one that is gone stays gone
    except OSError:
        return False
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live build holds it
        pid = lock.read(32).strip()
        if not pid and time.time() - os.fstat(lock.fileno()).st_mtime < DEAD_AFTER_S:
            return False  # a build that has opened it and is about to take it
        try:
            os.unlink(lock_path)  # removed while held, as a finishing build removes its own
        except OSError:
            return False
        return True
    finally:
        lock.close()


def _sync_directory(path: Path) -> None:
    """Make renames in ``path`` durable: a directory's entries reach the disk with its own fsync only."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # a platform or file system that cannot sync a directory: the renames stand as they are
        pass
    finally:
        os.close(fd)


def _free(path: Path) -> str:
    try:
        return f"{shutil.disk_usage(path).free:,} bytes"
    except OSError:
        return "unknown"


