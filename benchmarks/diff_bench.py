"""What ``sftpack diff`` costs on full-size files: two 6,400 x 8,192 rows files, time and peak memory.

The files are written with the project's own packer and writer (``sftpack.builder.pack.pack`` + ``sftpack.rows.parquet_writer.RowWriter``:
64-row groups, zstd, provenance columns) from a seeded stream of synthetic conversations (Zipf-distributed token
ids over the Qwen3.5 vocabulary size, so they compress like text; geometric lengths, mean ~900 tokens; a prompt
then a supervised answer). Building 6,400 real rows on a 2-core machine takes minutes; the diff only reads rows,
so synthetic rows cost it the same.

- ``A``: the stream packed; ``A copy``: the same file copied;
- ``B``: the same stream with one conversation in the middle left out (a skipped conversation): the first
  difference is near row 3,200 and every row after it differs, the worst case for the comparison.

Each measurement runs in a fresh subprocess; wall time and peak RSS (``ru_maxrss``) and the growth over the RSS
after imports. The baseline, measured in the same run, is ``sftpack hash`` of both files (the least any
comparison must read); "naive" reads both files whole with ``read_rows`` and compares them in memory.

    python benchmarks/diff_bench.py                 # full size (writes ~0.8 GB under a temp dir)
    python benchmarks/diff_bench.py --rows 640      # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VOCAB = 248_077
EOS = 248_046


def conversations(seed: int = 0, skip: int | None = None):
    """An endless seeded stream of ``(id, tokens, mask)``; ``skip``: leave that conversation out."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, VOCAB + 1, dtype=np.float64))
    cdf /= cdf[-1]
    ids_by_rank = rng.permutation(VOCAB).astype(np.int32)
    k = 0
    while True:
        n = int(rng.geometric(1 / 900)) + 20
        tokens = ids_by_rank[np.searchsorted(cdf, rng.random(n))]
        mask = np.zeros(n, np.uint8)
        mask[min(n - 1, int(rng.geometric(1 / 250))) :] = 1
        if k != skip:
            yield f"s{k:06d}", tokens, mask
        k += 1


def write(path: Path, n: int, width: int, skip: int | None) -> None:
    from sftpack.builder.pack import pack
    from sftpack.rows.parquet_writer import RowWriter

    writer = RowWriter(path, width, "bench-diff")
    for row in pack(conversations(skip=skip), width, EOS):
        writer.write(row)
        if writer.rows == n:
            break
    writer.close()


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(kind: str, a: str, b: str) -> dict:
    import sftpack  # noqa: F401  (imports counted in the base RSS)
    from sftpack.checks.diff import diff_rows
    from sftpack.rows import hash_rows, read_rows

    base = _rss_mb()
    t = time.perf_counter()
    out = {}
    if kind == "hash":
        out["sha"] = [hash_rows(a)["rows_sha256"], hash_rows(b)["rows_sha256"]]
    elif kind == "naive":
        ta, ma = read_rows(a)
        tb, mb = read_rows(b)
        differ = np.flatnonzero(((ta != tb) | (ma != mb)).any(axis=1))
        out["first_row"] = int(differ[0]) if len(differ) else None
    else:
        result = diff_rows(a, b, decode=False)
        first = result["first"] or {}
        out.update(cause=(result["cause"] or {}).get("cause"), first_row=first.get("row"),
                   position=first.get("position"), identical=result["counts"]["identical"])
    out["seconds"] = time.perf_counter() - t
    out["base_mb"] = base
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def measure(kind: str, a: Path, b: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", kind, str(a), str(b)], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=6400)
    parser.add_argument("--row-tokens", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", metavar="DIR", help="write the files there and keep them (reused when present)")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "A", "B"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    tmp = Path(args.files) if args.files else Path(tempfile.mkdtemp(prefix="sftpack-diff-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        a, copy, b = tmp / "A.parquet", tmp / "A-copy.parquet", tmp / "B.parquet"
        middle = args.rows * args.row_tokens // 2 // 920  # a conversation about half way through the rows
        if not (args.files and all(p.exists() for p in (a, copy, b))):
            write(a, args.rows, args.row_tokens, None)
            shutil.copy(a, copy)
            write(b, args.rows, args.row_tokens, middle)
            how = f"wrote A and B in {time.perf_counter() - t:.1f} s"
        else:
            how = f"reused A and B in {tmp}"
        mb = sum(p.stat().st_size for p in (a, b)) / 2**20
        print(f"{how} ({args.rows:,} x {args.row_tokens:,} tokens, {mb:,.0f} MB together); B lacks conversation "
              f"s{middle:06d}; load average {os.getloadavg()[0]:.1f}", flush=True)
        cases = [("baseline: sftpack hash of A and B", "hash", a, b), ("diff A, A copy (identical)", "diff", a, copy),
                 ("diff A, B (one conversation skipped mid-file)", "diff", a, b),
                 ("naive: read_rows both whole + compare", "naive", a, b)]
        results = {}
        for label, kind, x, y in cases:
            runs = [measure(kind, x, y) for _ in range(args.runs)]
            results[label] = runs
            print(f"  {label}: {[round(r['seconds'], 2) for r in runs]} s", flush=True)
        base = statistics.median(r["seconds"] for r in results[cases[0][0]])
        print(f"\n{args.rows:,} x {args.row_tokens:,} tokens per file, median of {args.runs} runs, {os.cpu_count()} cores")
        print(f"{'':48} {'seconds':>8} {'vs hash':>8} {'peak RSS':>9} {'growth':>8}")
        for label, runs in results.items():
            s = statistics.median(r["seconds"] for r in runs)
            peak = max(r["peak_mb"] for r in runs)
            growth = max(r["peak_mb"] - r["base_mb"] for r in runs)
            print(f"{label:48} {s:8.2f} {s / base:8.2f} {peak:7.0f} MB {growth:6.0f} MB")
        print(f"load average at the end {os.getloadavg()[0]:.1f} (the host is shared: compare the ratios)")
        skip_run = results[cases[2][0]][0]
        print(f"\ndiff A, B: cause {skip_run['cause']}, first difference row {skip_run['first_row']} position "
              f"{skip_run['position']}, {skip_run['identical']:,} rows identical")
    finally:
        if not args.files:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
