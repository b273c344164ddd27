"""How much of a build's memory sits in huge pages, with the tokenizer engines' tables collapsed into them
(``SFTPACK_HUGE_PAGES=1``, the default) and without (``=0``): one build of each, their processes' AnonHugePages and
Rss summed every ``--every`` seconds from ``/proc/PID/smaps_rollup`` (Linux).

    python benchmarks/huge_pages.py --workers 16 --rows all

The build is ``build_bench.py``'s, over its synthetic Tulu-schema source (cached under ``benchmarks/.cache/``); its
wall time is ``benchmarks/ab_env.py SFTPACK_HUGE_PAGES``'s to compare. A page the workers share with the parent is
counted once in each process that maps it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sample(group: int) -> tuple[int, int, int]:
    """(processes, AnonHugePages KiB, Rss KiB) summed over the process group ``group``."""
    pids = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
    huge = rss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("AnonHugePages:"):
                        huge += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
        except OSError:  # gone meanwhile
            pass
    return len(pids), huge, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Qwen3.5-122B-A10B")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--rows", default="all", help="rows of each build: a number or all")
    ap.add_argument("--every", type=float, default=1.5, help="seconds between samples")
    ap.add_argument("--conversations", type=int, default=939_000, help="conversations in the synthetic source")
    ap.add_argument("--cache", default=str(HERE / ".cache"))
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))
    import build_bench

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    source = build_bench.source_file(args.conversations, 1, cache, os.cpu_count() or 1)
    out = Path(tempfile.mkdtemp(prefix="sftpack-huge-pages-"))
    try:
        for setting in ("1", "0"):
            env = {**os.environ, "SFTPACK_HUGE_PAGES": setting, "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
            cmd = [sys.executable, "-m", "sftpack", "build", "--model", args.model, "--source", str(source), "--rows",
                   args.rows, "--workers", str(args.workers), "--out", str(out / setting), "--overwrite", "--no-progress"]
            build = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # its own process group: the build, its workers, its writer
            start = time.perf_counter()
            while build.poll() is None:
                time.sleep(args.every)
                processes, huge, rss = sample(build.pid)
                print(f"SFTPACK_HUGE_PAGES={setting} t={time.perf_counter() - start:5.1f}s processes {processes:2d} "
                      f"AnonHugePages {huge / 1024:5.0f} MiB Rss {rss / 1024:6.0f} MiB", flush=True)
            if build.returncode:
                raise SystemExit(f"the build with SFTPACK_HUGE_PAGES={setting} failed (exit {build.returncode})")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
