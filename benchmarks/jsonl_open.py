"""What opening a JSONL source costs (``JsonLinesSource``: one pass over the file for the line offsets, blank and
whitespace-only lines left out), against the least such a pass can cost, measured in the same run: reading the
file in the same blocks and finding its newlines.

The file is written once: Tulu-shaped rows (a few hundred words each) with every seventh line followed by a blank
one. Each figure is the median of ``--repeat`` opens; the page cache is warm for all of them alike.

    python benchmarks/jsonl_open.py               # 512 MB
    python benchmarks/jsonl_open.py --mb 64       # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sftpack.sources import JsonLinesSource, SourceInfo  # noqa: E402


def write(path: Path, megabytes: int) -> int:
    rng = np.random.default_rng(0)
    words = [f"word{k}" for k in range(500)]
    rows = 0
    with open(path, "w", encoding="utf-8") as f:
        while f.tell() < megabytes << 20:
            text = " ".join(rng.choice(words, int(rng.integers(20, 600))))
            f.write(json.dumps({"id": f"c{rows}", "messages": [{"role": "user", "content": text},
                                                               {"role": "assistant", "content": text[::-1]}]}) + "\n")
            if rows % 7 == 0:
                f.write("\n")
            rows += 1
    return rows


def floor(path: Path) -> int:
    """Read in the same blocks, count newlines: what any line index must do."""
    fd, n = os.open(path, os.O_RDONLY), 0
    try:
        size = os.fstat(fd).st_size
        for offset in range(0, size, JsonLinesSource.BLOCK):
            n += int(np.count_nonzero(np.frombuffer(os.pread(fd, JsonLinesSource.BLOCK, offset), np.uint8) == 10))
    finally:
        os.close(fd)
    return n


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=512, help="size of the JSONL file")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sftpack-jsonl-") as tmp:
        path = Path(tmp) / "s.jsonl"
        rows = write(path, args.mb)
        size = path.stat().st_size
        base, newlines = timed(lambda: floor(path), args.repeat)
        opened, source = timed(lambda: JsonLinesSource(path, SourceInfo("s.jsonl", "file")), args.repeat)
        assert len(source) == rows and newlines == rows + (rows + 6) // 7, (len(source), rows, newlines)
    print(f"# python benchmarks/jsonl_open.py --mb {args.mb} --repeat {args.repeat}  "
          f"({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores)")
    print(f"{size / 1e6:,.0f} MB, {rows:,} rows, {newlines - rows:,} blank lines; median of {args.repeat}")
    print(f"baseline: read + find newlines   {base:7.3f} s  {size / base / 1e9:5.2f} GB/s  1.00")
    print(f"JsonLinesSource(path)            {opened:7.3f} s  {size / opened / 1e9:5.2f} GB/s  {opened / base:.2f}")


if __name__ == "__main__":
    main()
