"""The tokenizer engines' tables moved onto transparent huge pages (Linux 6.1+), before the build's workers fork.

quicktok's constructor allocates its tables (the heap grows by about 90 MB for Qwen3.5's vocabulary) in 4 KiB pages:
every rank lookup of the BPE merges is a random read over them, and many miss the TLB. Collapsed into 2 MiB pages
with ``madvise(MADV_COLLAPSE)`` they miss less, and the forked workers share the huge pages: a 16-worker ``--rows all``
build uses 0.94 of the CPU seconds (``benchmarks/results/ab_env/huge_pages_16_cores.txt``). The collapse itself takes
up to 0.2 s, so a build collapses them only when it asks for PAYS_FROM_TOKENS tokens or more (or every row), and
``SFTPACK_HUGE_PAGES=0`` turns it off: the same bytes, in smaller pages."""

from __future__ import annotations

import ctypes
import os
import sys
import threading

from sftpack.base.signals import signals_held

HUGE_PAGE = 2 << 20
# the collapse's 0.14-0.22 s against 3.5-4% of one worker's loop: it pays once that loop is over ~5 s, 16M tokens
PAYS_FROM_TOKENS = 1 << 24
MADV_COLLAPSE = 25  # linux/mman.h; EINVAL before Linux 6.1, where the build goes on in 4 KiB pages


def enabled() -> bool:
    """Whether a build collapses its heap: on Linux, unless ``SFTPACK_HUGE_PAGES=0`` (benchmarks/ab_env.py)."""
    return sys.platform.startswith("linux") and os.environ.get("SFTPACK_HUGE_PAGES", "1") != "0"


def heap_end() -> int | None:
    """Where the process's heap (``[heap]``, grown by ``brk``) ends now, or None where there is none to read."""
    span = _heap()
    return None if span is None else span[1]


def collapse_grown_heap(since: int | None) -> threading.Thread:
    """A started thread collapsing the heap's whole huge pages above ``since`` (a :func:`heap_end`): what was
    allocated in between. The range is read here and the thread only calls ``madvise``, which runs without the GIL:
    from its start, beside the rest of the build's start-up, even a constructor that holds the GIL. Join the thread
    before forking, so that the children share the huge pages. Whatever fails (an old kernel, a page in use) leaves
    the memory as it was: the same bytes either way, in smaller pages."""
    call = _collapse_call(since)
    thread = threading.Thread(target=call[0] if call else None, args=call[1:] if call else (),
                              name="sftpack-huge-pages", daemon=True)
    with signals_held():
        thread.start()
    return thread


def collapse_above(since: int | None) -> int:
    """Collapse the heap's whole huge pages above ``since``, here; the bytes asked for (0: none, or it failed)."""
    call = _collapse_call(since)
    if call is not None and call[0](*call[1:]) == 0:
        return call[2]
    return 0


def _collapse_call(since: int | None) -> tuple | None:
    """``(madvise, start, length, MADV_COLLAPSE)`` for the heap's whole huge pages above ``since``, or None."""
    span = _heap()
    if since is None or span is None or not enabled():
        return None
    low = (max(since, span[0]) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
    high = span[1] & ~(HUGE_PAGE - 1)
    if high <= low:
        return None
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return madvise, low, high - low, MADV_COLLAPSE


def _heap() -> tuple[int, int] | None:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith("[heap]"):
                    low, high = line.split(None, 1)[0].split("-")
                    return int(low, 16), int(high, 16)
    except OSError:
        pass
    return None
