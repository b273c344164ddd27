"""The file a rows writer writes, made durable: :class:`DurableFile` owns the writeback, the fsync, the file's
sha256 and the abort, so that a rows format's writer only encodes rows.

A machine with memory to spare keeps a whole build's output as dirty pages (the kernel starts writing them on its
own at 10% of memory, or after 30 s), so one fsync after the last row would write all of it then: 0.5 s at the end
of a 1.1 GB build, 0.07 s with the writeback started every :data:`WRITEBACK_BYTES` (Linux: advising that the pages
are not needed writes the dirty ones back without waiting, and drops only clean pages). The advice is a hint:
:meth:`DurableFile.finish` makes the file durable.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sftpack.base.hashing import file_sha256

WRITEBACK_BYTES = 64 << 20


class DurableFile:
    """A rows file being written. ``DurableFile(path)`` creates it, and the writer writes through :meth:`write`,
    which hashes the bytes as they go out; ``DurableFile(path, written_elsewhere=True)`` follows a file that a
    library writes itself (pyarrow's ``ParquetWriter``, made first), through a descriptor of its own, and hashes it
    back at the end.

    :meth:`advance` hands the bytes written so far to the kernel's writeback, a stretch of :data:`WRITEBACK_BYTES`
    at a time; :meth:`finish` makes the file durable (flush, fsync), releases it and returns ``(sha256, bytes)``;
    :meth:`abort` releases it without finishing (once, whatever came before: a failed ``finish`` too).
    """

    def __init__(self, path, written_elsewhere: bool = False):
        self.path = Path(path)
        self._file = None if written_elsewhere else open(self.path, "wb")
        self._fd: int | None = os.open(self.path, os.O_RDONLY) if written_elsewhere else self._file.fileno()
        self._digest = None if written_elsewhere else hashlib.sha256()
        self.position = 0  # bytes written through write()
        self.done = 0  # bytes already handed to the writeback

    def write(self, data) -> None:
        self._file.write(data)
        self._digest.update(data)
        self.position += len(data)

    def size(self) -> int:
        """Bytes in the file so far (written here, or by the library that writes it)."""
        return self.position if self._file is not None else os.fstat(self._fd).st_size

    def advance(self) -> None:
        """Start the writeback of what was written since the last stretch, once it makes a whole stretch."""
        end = self.size()
        if end - self.done < WRITEBACK_BYTES:
            return
        self._flush()
        advise = getattr(os, "posix_fadvise", None)
        if advise is not None:
            try:
                advise(self._fd, self.done, end - self.done, os.POSIX_FADV_DONTNEED)
            except OSError:  # a file system without it: the fsync does all the writing, as it would anyway
                pass
        self.done = end

    def sync(self) -> None:
        """Everything written is on disk."""
        self._flush()
        os.fsync(self._fd)

    def finish(self) -> tuple[str, int]:
        """The file durable and released; its (sha256, size in bytes)."""
        try:
            self.sync()
        finally:
            self.abort()
        if self._digest is None:
            return file_sha256(self.path)
        return self._digest.hexdigest(), self.position

    def abort(self) -> None:
        """Release the file (once); the build removes it."""
        file, fd, self._file, self._fd = self._file, self._fd, None, None
        if file is not None:
            file.close()
        elif fd is not None:
            os.close(fd)

    def _flush(self) -> None:
        if self._file is not None:
            self._file.flush()
