"""The memory mapped since a point collapsed into huge pages, the heap's growth and a large block's own mapping
alike: the memory keeps its bytes, and where the kernel collapses (Linux 6.1+), it then holds huge pages;
``SFTPACK_HUGE_PAGES=0`` leaves it alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps and madvise: Linux")

ROOT = Path(__file__).resolve().parents[2]

# In a fresh process: 40 MiB in 32 KiB blocks from malloc (below its mmap threshold, so on the heap that brk grows)
# and one 24 MiB block (above it: a mapping of its own), each block filled with its own byte; the blocks' bytes
# before and after, the huge pages new_memory found, and the huge pages of the heap and of the large block's
# mapping from /proc/self/smaps.
SCRIPT = r"""
import ctypes, hashlib, json
from sftpack.base import huge_pages

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
before = huge_pages.anonymous_memory()
blocks = [(libc.malloc(32768), 32768) for i in range(1280)]
large = libc.malloc(24 << 20)
blocks.append((large, 24 << 20))
for i, (block, size) in enumerate(blocks):
    ctypes.memset(block, i % 251, size)

def digest():
    h = hashlib.sha256()
    for block, size in blocks:
        h.update(ctypes.string_at(block, size))
    return h.hexdigest()

def huge_kb(inside):
    total, lines, counting = 0, open("/proc/self/smaps").read().splitlines(), False
    for line in lines:
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            low, high = (int(x, 16) for x in fields[0].split("-"))
            counting = inside(low, high, line)
        elif counting and line.startswith("AnonHugePages:"):
            total += int(fields[1])
    return total

heap = lambda low, high, line: line.endswith("[heap]")
mapping = lambda low, high, line: low <= large < high and not line.endswith("[heap]")
before_digest, heap_before, mapping_before = digest(), huge_kb(heap), huge_kb(mapping)
pages = huge_pages.new_memory(before)
for thread in huge_pages.collapse(pages):
    thread.join()
print(json.dumps({"same": digest() == before_digest, "found": sum(high - low for low, high in pages),
                  "in_large": sum(min(high, large + (24 << 20)) - max(low, large) for low, high in pages
                                  if low < large + (24 << 20) and high > large),
                  "heap_before": heap_before, "heap_after": huge_kb(heap),
                  "mapping_before": mapping_before, "mapping_after": huge_kb(mapping)}))
"""


def run(setting: str) -> dict:
    env = dict(os.environ, SFTPACK_HUGE_PAGES=setting, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_new_memory_is_collapsed_and_keeps_its_bytes():
    got = run("1")
    assert got["same"]  # the memory reads the same after the collapse
    # whole 2 MiB pages of what was mapped: the 64 MiB but partial pages at the ends of the heap's growth and mapping
    assert (64 << 20) - (8 << 20) <= got["found"] <= (64 << 20) + (4 << 20)
    assert got["in_large"] >= (24 << 20) - (4 << 20)  # the large block's own mapping, which the heap does not hold
    if got["heap_after"] == got["heap_before"] and got["mapping_after"] == got["mapping_before"]:
        pytest.skip("this kernel collapses no memory (MADV_COLLAPSE: Linux 6.1+, and a free 2 MiB page)")
    assert got["heap_after"] - got["heap_before"] >= 32 << 10  # KiB: most of the 40 MiB
    assert got["mapping_after"] - got["mapping_before"] >= 20 << 10


def test_turned_off_it_leaves_the_memory_alone():
    got = run("0")
    assert got["same"] and got["found"] == 0
    assert got["heap_after"] == got["heap_before"] and got["mapping_after"] == got["mapping_before"]
