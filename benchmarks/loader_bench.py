"""What the rows parquet costs the trainer: slime's loader, ``generate_rollout`` and ``sftpack.read_rows``.

Writes a full-size rows file (default 6,400 x 8,192) through ``sftpack.rows.parquet_writer.RowWriter`` - the real layout:
binary ``tokens``/``loss_mask`` columns, 64-row groups, zstd - with Zipf-distributed token ids (so it
compresses like text, not like zeros), and beside it a baseline holding the same rows as ``list<int32>`` /
``list<uint8>`` columns. Each measurement runs in a fresh subprocess and reports wall time and peak RSS
(``ru_maxrss``; "growth" = peak minus the RSS after imports; memory is the maximum over the runs):

- slime / miles loader: ``ParquetFile.iter_batches()`` + ``batch.to_pylist()`` over all columns, keeping
  ``row["messages"]`` and ``row["metadata"]`` in Sample-like objects (slime/utils/data.py; miles/utils/data.py
  reads the same way since miles 8a988dc3d), on the current format (``messages`` a one-message chat) and on a
  format-1 copy (``messages`` the string ``"sftpack row K"``) written beside it;
- ``generate_rollout`` on a 128-row batch (consecutive rows, and rows of a shuffled order as with
  ``--rollout-shuffle``), first batch with a cold reader; "next batch" is the second batch of the same process;
- ``sftpack.read_rows`` of the whole file.

    python benchmarks/loader_bench.py                  # full size (writes ~0.5 GB under a temp dir)
    python benchmarks/loader_bench.py --rows 640       # quick look

Targets: loader <= 3 s and <= 1 GB for 6,400 x 8,192; generate_rollout(128 rows) <= 0.5 s.
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

VOCAB = 248_077  # Qwen3.5


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# ----------------------------------------------------------------------------------------------- the files


def synthetic_rows(n: int, width: int, seed: int = 0):
    """``n`` rows of ``width`` tokens: Zipf(1.0) over a shuffled vocabulary, conversation-like mask runs."""
    from sftpack.rows.model import Piece, Row

    rng = np.random.default_rng(seed)
    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / ranks)
    cdf /= cdf[-1]
    ids_by_rank = rng.permutation(VOCAB).astype(np.int32)
    for k in range(n):
        tokens = ids_by_rank[np.searchsorted(cdf, rng.random(width))]
        mask = np.zeros(width, np.uint8)
        pieces, at, conv = [], 0, 0
        while at < width:  # prompt (mask 0) then answer (mask 1), conversation after conversation
            length = min(width - at, int(rng.geometric(1 / 900)) + 20)
            prompt = min(length, int(rng.geometric(1 / 250)))
            mask[at + prompt : at + length] = 1
            pieces.append(Piece(f"synthetic-{k}-{conv}", at, length, 0))
            at, conv = at + length, conv + 1
        mask[0] = 0
        yield Row(tokens, mask, pieces)


def write_files(directory: Path, n: int, width: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sftpack.rows.parquet import SCHEMA
    from sftpack.rows.parquet_writer import ROWS_PER_GROUP, WRITER_OPTIONS, RowWriter

    binary_path = directory / "rows-binary.parquet"
    list_path = directory / "rows-list.parquet"
    writer = RowWriter(binary_path, width, "bench-build")
    for row in synthetic_rows(n, width):
        writer.write(row)
    writer.close()

    # Baseline: the same rows, tokens and mask as list columns (what a "natural" layout would store).
    fields = [pa.field("tokens", pa.list_(pa.int32())), pa.field("loss_mask", pa.list_(pa.uint8()))]
    fields += [SCHEMA.field(name) for name in SCHEMA.names[2:]]
    schema = pa.schema(fields, metadata={"sftpack.row_tokens": str(width)})
    source = pq.ParquetFile(binary_path)
    with pq.ParquetWriter(str(list_path), schema, **WRITER_OPTIONS) as out:
        for batch in source.iter_batches(batch_size=ROWS_PER_GROUP):
            tokens = np.frombuffer(b"".join(batch.column("tokens").to_pylist()), "<i4")
            mask = np.frombuffer(b"".join(batch.column("loss_mask").to_pylist()), np.uint8)
            offsets = pa.array(np.arange(0, len(tokens) + 1, width, dtype=np.int32))
            columns = [pa.ListArray.from_arrays(offsets, pa.array(tokens)), pa.ListArray.from_arrays(offsets, pa.array(mask))]
            columns += [batch.column(name) for name in SCHEMA.names[2:]]
            out.write_table(pa.Table.from_arrays(columns, schema=schema), row_group_size=ROWS_PER_GROUP)
    return binary_path, list_path


def write_format1(path: Path) -> Path:
    """A copy of ``path`` as format 1 wrote it: ``messages`` the string ``"sftpack row K"``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sftpack.rows.parquet_writer import ROWS_PER_GROUP, WRITER_OPTIONS

    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index("messages"), "messages",
                             pa.array([f"sftpack row {k}" for k in range(table.num_rows)], pa.string()))
    table = table.replace_schema_metadata({**table.schema.metadata, b"sftpack.format": b"1"})
    out = path.with_name("format1.parquet")
    pq.write_table(table, out, row_group_size=ROWS_PER_GROUP, **{**WRITER_OPTIONS, "use_dictionary": ["messages", "metadata.build"]})
    return out


# ------------------------------------------------------------------------------------ measured in a child


class _Sample:  # the fields of slime's Sample that its Dataset sets
    __slots__ = ("prompt", "label", "metadata", "tokens", "response_length", "loss_mask", "reward")

    def __init__(self, prompt, metadata):
        self.prompt, self.metadata, self.label = prompt, metadata, None


def child_slime(path: str) -> dict:
    import pyarrow.parquet as pq

    samples = []
    for batch in pq.ParquetFile(path).iter_batches():  # slime/utils/data.py read_file + Dataset
        for data in batch.to_pylist():
            samples.append(_Sample(data.get("messages"), data.get("metadata") or {}))
    return {"rows": len(samples)}


class _Buffer:
    def __init__(self, samples):
        self.samples = samples

    def get_samples(self, n):
        return [[s] for s in self.samples[:n]]


def _rollout(path: str, order: str) -> dict:
    """Two 128-row batches through ``generate_rollout`` in one process: the first with a cold reader."""
    import types

    from sftpack.rows.parquet import open_rows
    from sftpack.trainer.rollout import generate_rollout

    n_rows = open_rows(path).metadata.num_rows
    order_rows = np.arange(n_rows) if order == "consecutive" else np.random.default_rng(1).permutation(n_rows)
    args = types.SimpleNamespace(prompt_data=path, rollout_batch_size=128, rollout_global_dataset=True)
    times = []
    for b in range(2):
        rows = order_rows[(128 * b + 32 + np.arange(128)) % n_rows]  # off the 64-row group boundaries
        samples = [_Sample([{"role": "user", "content": f"sftpack row {k}"}], {"row": int(k), "build": "bench-build"}) for k in rows]
        start, cpu = time.perf_counter(), time.process_time()
        groups = generate_rollout(args, b, _Buffer(samples))
        times.append((time.perf_counter() - start, time.process_time() - cpu))
        sample = groups[-1][0]
        assert len(groups) == 128 and len(sample.loss_mask) == sample.response_length <= len(sample.tokens)
    return {"rows": 128, "inner_seconds": times[0][0], "inner_cpu": times[0][1], "next_seconds": times[1][0]}


def child_rollout_consecutive(path: str) -> dict:
    return _rollout(path, "consecutive")


def child_rollout_random(path: str) -> dict:
    return _rollout(path, "random")


def child_read_rows(path: str) -> dict:
    from sftpack.rows import read_rows

    tokens, mask = read_rows(path)
    return {"rows": len(tokens)}


CHILDREN = {name[len("child_"):]: fn for name, fn in globals().items() if name.startswith("child_")}


def run_child(kind: str, path: Path, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **(env or {})))
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_main(kind: str, path: str) -> None:
    import pyarrow.parquet  # noqa: F401  (imports are not part of what is measured)

    import sftpack.trainer.rollout  # noqa: F401

    before = _rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    result = CHILDREN[kind](path)
    result["seconds"] = result.pop("inner_seconds", time.perf_counter() - start)
    result["cpu_seconds"] = result.pop("inner_cpu", time.process_time() - cpu)
    result["peak_mb"] = _peak_mb()
    result["growth_mb"] = result["peak_mb"] - before
    print(json.dumps(result))


# -------------------------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=6400)
    ap.add_argument("--row-tokens", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median time, max memory)")
    ap.add_argument("--dir", help="where to write the files (default: a temporary directory, removed after)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the list-column baseline (it needs several GB)")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child_main(*args.child)

    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="sftpack-loader-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        binary_path, list_path = write_files(directory, args.rows, args.row_tokens)
        print(f"wrote {args.rows} x {args.row_tokens} rows in {time.perf_counter() - start:.1f} s: "
              f"binary layout {binary_path.stat().st_size / 2**20:.0f} MiB, list baseline {list_path.stat().st_size / 2**20:.0f} MiB")
        # pyarrow's default allocator (mimalloc) makes the loader's peak bimodal (~0.8 or ~1.05 GB, run to run);
        # the system allocator keeps it at the low mode: measured as its own line.
        system_pool = {"ARROW_DEFAULT_MEMORY_POOL": "system"}
        format1_path = write_format1(binary_path)
        plan = [("slime loader", "slime", binary_path, None),
                ("slime loader, ARROW_DEFAULT_MEMORY_POOL=system", "slime", binary_path, system_pool),
                ("slime loader, format 1 (string messages)", "slime", format1_path, None)]
        if not args.no_baseline:
            plan += [("slime loader, list baseline", "slime", list_path, None)]
        plan += [("generate_rollout 128 consecutive", "rollout_consecutive", binary_path, None),
                 ("generate_rollout 128 shuffled", "rollout_random", binary_path, None),
                 ("sftpack.read_rows (all rows)", "read_rows", binary_path, None)]
        results = {}
        print(f"\n{'measurement (median of %d runs)' % args.repeat:<46} {'seconds':>8} {'CPU s':>7} {'peak RSS MB':>12} "
              f"{'growth MB':>10}  {'next batch s':>12}")
        for label, kind, path, env in plan:
            runs = [run_child(kind, path, env) for _ in range(args.repeat)]
            r = {key: statistics.median(x[key] for x in runs) for key in ("seconds", "cpu_seconds")}
            r.update({key: max(x[key] for x in runs) for key in ("peak_mb", "growth_mb")})
            nxt = f"{statistics.median(x['next_seconds'] for x in runs):12.3f}" if "next_seconds" in runs[0] else ""
            results[label] = r
            print(f"{label:<46} {r['seconds']:8.3f} {r['cpu_seconds']:7.3f} {r['peak_mb']:12.0f} {r['growth_mb']:10.0f}  {nxt}")
        if not args.no_baseline:
            for ours, base in (("slime loader", "slime loader, list baseline"),):
                o, b = results[ours], results[base]
                print(f"{ours}: binary layout vs list baseline: {b['seconds'] / o['seconds']:.1f}x less time, "
                      f"{b['cpu_seconds'] / o['cpu_seconds']:.1f}x less CPU, {b['growth_mb'] / max(o['growth_mb'], 1):.1f}x less memory growth")
        o, b = results["slime loader"], results["slime loader, format 1 (string messages)"]
        print(f"slime loader: format 2 (chat messages) vs format 1 (string): {o['seconds'] / b['seconds']:.2f}x the time, "
              f"{o['growth_mb'] / max(b['growth_mb'], 1):.2f}x the memory growth")
        full = args.rows == 6400 and args.row_tokens == 8192
        loader = results["slime loader"]
        rollout = max(results["generate_rollout 128 consecutive"]["seconds"], results["generate_rollout 128 shuffled"]["seconds"])
        ok = lambda good: "ok" if good else "MISSED"  # noqa: E731
        print(f"targets{'' if full else ' (not full size: indicative only)'}: slime loader {loader['seconds']:.2f} s <= 3 s "
              f"{ok(loader['seconds'] <= 3)}; its memory <= 1 GB: growth {loader['growth_mb']:.0f} MB {ok(loader['growth_mb'] <= 1024)}, "
              f"peak RSS {loader['peak_mb']:.0f} MB incl. interpreter and imports {ok(loader['peak_mb'] <= 1024)}; "
              f"generate_rollout {rollout:.3f} s <= 0.5 s {ok(rollout <= 0.5)}")
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
