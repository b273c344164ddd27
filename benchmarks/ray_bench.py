"""A build on a Ray cluster against the local build on the same machine, in the same run: Mtok/s ratio, the
driver's memory, and the bytes (the two rows files must be identical).

    python benchmarks/ray_bench.py                                      # Tulu-size, 16 CPUs against --workers 16
    python benchmarks/ray_bench.py --conversations 20000 --rows all --cpus 2 --nodes 2

1. The synthetic Tulu-schema source of ``build_bench.py`` (generated once, cached under ``benchmarks/.cache/``).
2. The local build, ``--workers CPUS``, in a process of its own (wall, peak memory of the build process and of its
   workers, sampled from ``/proc``).
3. A Ray cluster on this machine, ``--nodes`` nodes sharing ``--cpus`` CPUs (``ray.cluster_utils.Cluster``,
   127.0.0.1), then the same build with ``--ray ADDRESS`` in a process of its own: wall and the peak memory of the
   driver (the build process and its rows writer process; the tasks' workers belong to the cluster's nodes and are
   reported apart: the sum of their peaks).
4. The two builds run in turn ``--pairs`` times; the report gives each pair's ratio and checks the bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from build_bench import MODEL, TULU_SIZE, MemorySampler, source_file  # noqa: E402


def build(source: Path, rows: str, out: Path, extra: list[str], env: dict) -> dict:
    """One build in a process of its own: wall, tokens, the record's hashes and the memory of its processes."""
    cmd = [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(source), "--rows", rows,
           "--out", str(out), "--overwrite", "--no-progress", *extra]
    timings = out.parent / f"{out.name}-timings.json"
    env = {**env, "SFTPACK_TIMINGS": str(timings)}
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env, cwd=HERE.parent)
    sampler = MemorySampler(proc.pid)
    if proc.wait() != 0:
        raise SystemExit(f"build failed: {' '.join(cmd)}")
    wall = time.perf_counter() - t
    memory = sampler.stop()
    import yaml

    (record_path,) = out.glob("*.build.yaml")
    record = yaml.safe_load(record_path.read_text())
    (rows_file,) = out.glob("*.parquet")
    return {"wall_s": wall, "tokens": record["counts"]["total_tokens"], "rows": record["rows"],
            "rows_sha256": record["rows_sha256"], "parquet": rows_file.read_bytes(), "memory": memory,
            "timings": json.loads(timings.read_text())["parent"]}


class WorkersSampler:
    """The peak of the summed RSS of the cluster's worker processes (titled ``ray::...`` by Ray: ``ray::IDLE``, or
    the task they run), sampled while a build runs: they end with the driver's job."""

    def __init__(self, interval: float = 0.05):
        self.peak, self.interval = 0, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for proc in Path("/proc").iterdir():
                try:
                    if proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith((b"ray::IDLE",
                                                                                           b"ray::encode_range")):
                        status = (proc / "status").read_text()
                        total += int(next(line.split()[1] for line in status.splitlines()
                                          if line.startswith("VmRSS:"))) * 1024
                except (OSError, StopIteration):
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=TULU_SIZE)
    parser.add_argument("--rows", default="all")
    parser.add_argument("--cpus", type=int, default=16, help="--workers of the local build, CPUs of the cluster")
    parser.add_argument("--nodes", type=int, default=1, help="Ray nodes on this machine sharing --cpus")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="of the synthetic source")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    os.environ.update({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "HF_HUB_OFFLINE": "1"})
    cache = HERE / ".cache"
    cache.mkdir(exist_ok=True)
    source = source_file(args.conversations, args.seed, cache, os.cpu_count() or 1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}

    from ray.cluster_utils import Cluster

    share = [args.cpus // args.nodes + (1 if k < args.cpus % args.nodes else 0) for k in range(args.nodes)]
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": share[0]})
    for cpus in share[1:]:
        cluster.add_node(num_cpus=cpus)
    cluster.wait_for_nodes()
    pairs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.pairs):
                local = build(source, args.rows, Path(tmp) / "local", ["--workers", str(args.cpus)], env)
                workers = WorkersSampler()
                on_ray = build(source, args.rows, Path(tmp) / "ray", ["--ray", cluster.address], env)
                on_ray["workers_peak_bytes"] = workers.stop()
                assert on_ray["parquet"] == local["parquet"], "the Ray build's rows file is not the local build's"
                pairs.append((local, on_ray))
    finally:
        cluster.shutdown()
    report(pairs, args)


def phases(t: dict) -> str:
    """The build process's wall by phase (``SFTPACK_TIMINGS``): before its loop, the loop, the end."""
    after = ("loop_s", "close_s", "commit_s", "result_wait_s")
    before = sum(v for k, v in t.items() if k.endswith("_s") and k not in after and not k.startswith("writer_"))
    return (f"before the loop {before:.2f} s, loop {t.get('loop_s', 0):.2f} s (waiting for results "
            f"{t.get('result_wait_s', 0):.2f} s), close and commit {t.get('close_s', 0) + t.get('commit_s', 0):.2f} s")


def report(pairs: list, args) -> None:
    gib = lambda n: f"{n / 2**30:.2f} GiB"  # noqa: E731
    print(f"{MODEL}, {args.conversations:,} conversations, --rows {args.rows}; {args.cpus} CPUs: local --workers "
          f"{args.cpus} against a Ray cluster of {args.nodes} node(s) on this machine ({os.cpu_count()} cores)")
    out = []
    for k, (local, on_ray) in enumerate(pairs):
        rate = {name: b["tokens"] / b["wall_s"] / 1e6 for name, b in (("local", local), ("ray", on_ray))}
        lm, rm = local["memory"], on_ray["memory"]
        print(f"pair {k}: {local['rows']:,} rows, {local['tokens']:,} tokens, rows_sha256 "
              f"{local['rows_sha256'][:16]}... (both rows files byte-identical)")
        print(f"  local: {local['wall_s']:.2f} s, {rate['local']:.1f} Mtok/s; build process peak RSS "
              f"{gib(lm['parent'].get('VmRSS', 0))}, all processes' own memory (PSS) {gib(lm['pss_own'])}")
        print(f"  ray:   {on_ray['wall_s']:.2f} s, {rate['ray']:.1f} Mtok/s; driver peak RSS "
              f"{gib(rm['parent'].get('VmRSS', 0))} (anonymous {gib(rm['parent'].get('RssAnon', 0))}), driver and its "
              f"writer (PSS) {gib(rm['pss_own'])}; the cluster's encoding workers, peaks summed "
              f"{gib(on_ray['workers_peak_bytes'])}")
        for name, b in (("local", local), ("ray", on_ray)):
            print(f"  {name} phases: {phases(b['timings'])}")
        print(f"  ratio ray / local: {rate['ray'] / rate['local']:.3f} of the Mtok/s")
        out.append({"local": {k: v for k, v in local.items() if k != "parquet"},
                    "ray": {k: v for k, v in on_ray.items() if k != "parquet"}, "ratio": rate["ray"] / rate["local"]})
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
