"""What a small build costs in a process that has built before: the 1-row sample build, N times after a first one.

    python benchmarks/startup_bench.py                 # Qwen3.5, 1 row, 7 builds after the first
    python benchmarks/startup_bench.py --rows 64 --builds 5 --model gpt-oss-20b

One process (``sftpack.build``, as a notebook or a test suite calls it): the first build loads the vocabulary and
builds the tokenizer engine (its tables from sftpack's cache when they are there), the later ones find both. Prints
each build's wall and phases (``SFTPACK_TIMINGS``), then the later builds' median and spread against the first
build, measured in the same run, and against the target (a 1-row build at most 0.3 s).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))


def one_build(model: str, rows: int, workers: int | None) -> tuple[float, dict]:
    from sftpack import BuildConfig, build

    out = tempfile.mkdtemp(prefix="sftpack-startup-")
    os.environ["SFTPACK_TIMINGS"] = os.path.join(out, "timings.json")
    t = time.perf_counter()
    build(BuildConfig(model=model, source="sample", rows=rows, out=out, workers=workers, progress=False))
    wall = time.perf_counter() - t
    return wall, json.loads(Path(out, "timings.json").read_text())["parent"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Qwen3.5-122B-A10B")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--builds", type=int, default=7, help="builds after the first (default 7)")
    ap.add_argument("--workers", type=int, default=None, help="--workers of every build (default: the build's own)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if "gpt-oss" in args.model and "TIKTOKEN_CACHE_DIR" not in os.environ:
        from helpers.harmony_vocab import seed_caches

        os.environ["TIKTOKEN_CACHE_DIR"] = str(seed_caches(Path(tempfile.mkdtemp()))[0])
    t = time.perf_counter()
    import sftpack  # noqa: F401

    print(f"{args.model}, --source sample --rows {args.rows}, {len(os.sched_getaffinity(0))} cores; import sftpack "
          f"{time.perf_counter() - t:.2f} s")
    walls = []
    for k in range(args.builds + 1):
        wall, phases = one_build(args.model, args.rows, args.workers)
        walls.append(wall)
        shown = ", ".join(f"{key} {v:.3f}" for key, v in phases.items() if v >= 0.005)
        print(f"{'first' if k == 0 else f'build {k}'}: {wall:.3f} s ({shown})", flush=True)
    later = walls[1:]
    median = statistics.median(later)
    print(f"\nFIGURE: a {args.rows}-row sample build in a process that has built once: median of {len(later)} "
          f"{median:.3f} s (min {min(later):.3f}, max {max(later):.3f}) = {median / walls[0]:.3f} of the first build's "
          f"{walls[0]:.3f} s" + ("   (target <= 0.3 s)" if args.rows == 1 else ""))


if __name__ == "__main__":
    main()
