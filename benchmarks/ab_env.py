"""One build two ways, in turns, as whole processes: a setting the build reads from the environment at two values
(``1`` and ``0`` unless ``--values`` says others), or this checkout's code and another's (``--against DIR``), the
rows checked identical.

    python benchmarks/ab_env.py SFTPACK_WRITER_PROCESS --workers 16 --rows all --pairs 2 --model gpt-oss-20b
    python benchmarks/ab_env.py SFTPACK_HUGE_PAGES --workers 16 --rows all --pairs 3
    python benchmarks/ab_env.py --against /path/to/other/checkout --workers 16 --rows all --pairs 3

The settings: ``SFTPACK_WRITER_PROCESS`` (the rows writer in a process of its own, or in the build's:
:mod:`sftpack.builder.writer_process`) and ``SFTPACK_HUGE_PAGES`` (the tokenizer engines' tables collapsed into huge
pages before the workers fork, or left in 4 KiB pages: :mod:`sftpack.base.huge_pages`). A choice made in the code
(a class constant, a function's answer) is compared with ``--against`` a checkout that makes the other.

The builds are ``build_bench.py``'s, over its synthetic Tulu-schema source (cached under ``benchmarks/.cache/``).
``--cpus`` pins the builds to those CPUs (a 2-core machine on a larger host). Prints each build's wall and CPU seconds
(user + system, the build and its workers) and rows_sha256, then per model the second value's wall over
the first's, pair by pair.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setting", nargs="?", choices=["SFTPACK_WRITER_PROCESS", "SFTPACK_HUGE_PAGES"])
    ap.add_argument("--against", type=Path, metavar="DIR",
                    help="instead of a setting: another checkout, whose code builds second in each pair")
    ap.add_argument("--values", nargs=2, metavar=("FIRST", "SECOND"),
                    help="the setting's two values, built in this order in each pair (default: 1 0)")
    ap.add_argument("--model", action="append", help="profiles to build (repeat; default Qwen3.5-122B-A10B)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", default="6400", help="rows of each build: a number or all")
    ap.add_argument("--cpus", help="comma-separated CPUs to pin the builds to (default: all)")
    ap.add_argument("--pairs", type=int, default=3, help="pairs per model, after one unmeasured build")
    ap.add_argument("--conversations", type=int, default=939_000, help="conversations in the synthetic source")
    ap.add_argument("--cache", default=str(HERE / ".cache"))
    args = ap.parse_args()
    if (args.setting is None) == (args.against is None):
        ap.error("name a setting or --against DIR (one of the two)")
    if args.against is not None:
        if not (args.against / "sftpack" / "__init__.py").is_file():
            ap.error(f"--against {args.against}: no sftpack/ package there")
        if args.values is not None:
            ap.error("--values is for a setting; --against compares this checkout's code with another's")
        args.setting, args.values = "code", ["this", str(args.against)]
    args.values = args.values or ["1", "0"]
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))
    import build_bench

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    source = build_bench.source_file(args.conversations, 1, cache, os.cpu_count() or 1)
    if args.cpus:  # the builds, started from here, inherit it (the source was generated on every core)
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    out = Path(tempfile.mkdtemp(prefix="sftpack-ab-env-"))

    def build(model: str, on: bool) -> dict:  # build_bench's build, the setting made by the environment
        if args.against is not None:
            return build_bench.run_build(source, args.rows, args.workers, out / model,
                                         code=HERE.parent if on else args.against.resolve(), memory=False)
        os.environ[args.setting] = args.values[0] if on else args.values[1]
        return build_bench.run_build(source, args.rows, args.workers, out / model, memory=False)

    same = True
    try:
        for model in args.model or ["Qwen3.5-122B-A10B"]:
            build_bench.MODEL = model
            build_bench._offline_o200k(cache)  # gpt-oss offline: tiktoken's cache seeded
            build(model, True)  # unmeasured: the page cache warmed
            ratios, shas = [], set()
            for _ in range(args.pairs):
                pair = {}
                for on in (True, False):
                    got = pair[on] = build(model, on)
                    shas.add(got["rows_sha256"])
                    print(f"{model:20s} workers {args.workers:2d} rows {args.rows:>5} cpus {args.cpus or 'all':6s} "
                          f"{args.setting}={args.values[0] if on else args.values[1]}  wall {got['wall_s']:6.2f} s  "
                          f"cpu {got['cpu_s']:7.2f} s  rows_sha256 {got['rows_sha256'][:16]}", flush=True)
                ratios.append(pair[False]["wall_s"] / pair[True]["wall_s"])
            same &= len(shas) == 1
            print(f"{model}: wall {args.setting}={args.values[1]} / ={args.values[0]}, pair by pair: {' '.join(f'{r:.3f}' for r in ratios)} "
                  f"(median {statistics.median(ratios):.3f}); rows identical: {len(shas) == 1}", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if not same:
        raise SystemExit("the two ways built different rows")


if __name__ == "__main__":
    main()
