"""The heap's growth collapsed into huge pages: the memory keeps its bytes, and where the kernel collapses (Linux
6.1+), the heap then holds huge pages; ``SFTPACK_HUGE_PAGES=0`` leaves it alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps and madvise: Linux")

ROOT = Path(__file__).resolve().parents[2]

# In a fresh process: 40 MiB in 32 KiB blocks from malloc (below its mmap threshold, so on the heap that brk grows),
# each filled with its own byte; the blocks' bytes before and after, the bytes collapse_above asked for, and the
# heap's huge pages from /proc/self/smaps.
SCRIPT = r"""
import ctypes, hashlib, json
from sftpack.base import huge_pages

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
mark = huge_pages.heap_end()
blocks = []
for i in range(1280):
    block = libc.malloc(32768)
    ctypes.memset(block, i % 251, 32768)
    blocks.append(block)

def digest():
    h = hashlib.sha256()
    for block in blocks:
        h.update(ctypes.string_at(block, 32768))
    return h.hexdigest()

def heap_huge_kb():
    lines, inside = open("/proc/self/smaps").read().splitlines(), False
    for line in lines:
        if "-" in line.split(" ", 1)[0] and len(line.split()) >= 5:
            inside = line.endswith("[heap]")
        elif inside and line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0

before, huge_before = digest(), heap_huge_kb()
collapsed = huge_pages.collapse_above(mark)
print(json.dumps({"mark": mark, "grown": huge_pages.heap_end() - mark, "collapsed": collapsed,
                  "same": digest() == before, "huge_before": huge_before, "huge_after": heap_huge_kb()}))
"""


def run(setting: str) -> dict:
    env = dict(os.environ, SFTPACK_HUGE_PAGES=setting, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_heaps_growth_is_collapsed_and_keeps_its_bytes():
    got = run("1")
    assert got["same"]  # the memory reads the same after the collapse
    assert got["grown"] >= 32 << 20  # most of the 40 MiB (malloc first reuses what the heap had free)
    if got["collapsed"] == 0:
        pytest.skip("this kernel collapses no memory (MADV_COLLAPSE: Linux 6.1+, and a free 2 MiB page)")
    # whole 2 MiB pages of what grew: all of it but the partial pages at its two ends
    assert got["grown"] - (4 << 20) <= got["collapsed"] <= got["grown"]
    assert got["huge_after"] * 1024 >= got["collapsed"] > got["huge_before"] * 1024


def test_turned_off_it_leaves_the_heap_alone():
    got = run("0")
    assert got["same"] and got["collapsed"] == 0 and got["huge_after"] == got["huge_before"]
