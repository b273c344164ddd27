"""The tokenizer engines' tables moved onto transparent huge pages (Linux 6.1+), before the build's workers fork.

quicktok's constructor allocates its tables (about 90 MB for Qwen3.5's vocabulary, in the heap and in the mappings
malloc makes for large blocks) in 4 KiB pages: every rank lookup of the BPE merges is a random read over them, and
many miss the TLB. Collapsed into 2 MiB pages
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
    """Whether a build collapses the engines' memory: on Linux, unless ``SFTPACK_HUGE_PAGES=0`` (benchmarks/ab_env.py)."""
    return sys.platform.startswith("linux") and os.environ.get("SFTPACK_HUGE_PAGES", "1") != "0"


def anonymous_memory() -> list[tuple[int, int]] | None:
    """The process's anonymous private read-write mappings, the heap among them: where malloc's memory comes from
    (the heap for small blocks, a mapping of its own for a large one, by a threshold malloc moves as it runs). None
    where they cannot be read."""
    try:
        ranges = []
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if fields[1][:2] == "rw" and fields[1][3:4] == "p" and (len(fields) == 5 or fields[5] == "[heap]"):
                    low, high = fields[0].split("-")
                    ranges.append((int(low, 16), int(high, 16)))
        return ranges
    except (OSError, ValueError, IndexError):
        return None


def new_memory(before: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """The whole huge pages of the anonymous memory mapped since ``before`` (an :func:`anonymous_memory`), as
    ``(start, stop)``; none where ``before`` is None, the memory cannot be read or the collapse is turned off."""
    after = anonymous_memory()
    if before is None or after is None or not enabled():
        return []
    pages = []
    for low, high in _outside(after, before):
        low, high = (low + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), high & ~(HUGE_PAGE - 1)
        if high > low:
            pages.append((low, high))
    return pages


def collapse(ranges: list[tuple[int, int]]) -> list[threading.Thread]:
    """Started threads collapsing ``ranges`` (:func:`new_memory`), one ``madvise`` each: a thread runs without the
    GIL from its start, beside the rest of the build's start-up, even a constructor that holds the GIL. Join them
    before forking, so that the children share the huge pages. Whatever fails (an old kernel, a page in use) leaves
    the memory as it was: the same bytes either way, in smaller pages."""
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return []
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    threads = [threading.Thread(target=madvise, args=(low, high - low, MADV_COLLAPSE), name="sftpack-huge-pages",
                                daemon=True) for low, high in ranges]
    with signals_held():
        for thread in threads:
            thread.start()
    return threads


def _outside(ranges: list[tuple[int, int]], covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``ranges`` that no range of ``covered`` holds.

    >>> _outside([(0, 10), (20, 30)], [(2, 4), (8, 22), (25, 26)])
    [(0, 2), (4, 8), (22, 25), (26, 30)]
    """
    covered, out, j = sorted(covered), [], 0
    for low, high in sorted(ranges):
        while j < len(covered) and covered[j][1] <= low:
            j += 1
        at, k = low, j
        while k < len(covered) and covered[k][0] < high:
            if covered[k][0] > at:
                out.append((at, covered[k][0]))
            at, k = max(at, covered[k][1]), k + 1
        if at < high:
            out.append((at, high))
    return out
