"""A rows file's bytes handed to the kernel's writeback as a writer writes them, and made durable at the end.

A machine with memory to spare keeps a whole build's output as dirty pages (the kernel starts writing them on its
own at 10% of memory, or after 30 s), so one fsync after the last row would write all of it then: 0.5 s at the end
of a 1.1 GB build, 0.07 s with the writeback started every :data:`WRITEBACK_BYTES` (Linux: advising that the pages
are not needed writes the dirty ones back without waiting, and drops only clean pages). The advice is a hint: :meth:`Writeback.sync` makes the file durable.
"""

from __future__ import annotations

import os
from typing import Callable

WRITEBACK_BYTES = 64 << 20


class Writeback:
    """Writeback for the file open as ``fileno``: :meth:`advance` each time its bytes so far reach ``end``
    (``flush``, when given, first empties the writer's own buffer into the file); :meth:`sync` at the end."""

    def __init__(self, fileno: int, flush: Callable[[], None] | None = None):
        self.fileno, self.flush = fileno, flush
        self.done = 0  # bytes already handed to the writeback

    def advance(self, end: int) -> None:
        if end - self.done < WRITEBACK_BYTES:
            return
        if self.flush is not None:
            self.flush()
        advise = getattr(os, "posix_fadvise", None)
        if advise is not None:
            try:
                advise(self.fileno, self.done, end - self.done, os.POSIX_FADV_DONTNEED)
            except OSError:  # a file system without it: the fsync does all the writing, as it would anyway
                pass
        self.done = end

    def sync(self) -> None:
        if self.flush is not None:
            self.flush()
        os.fsync(self.fileno)
