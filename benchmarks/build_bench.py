"""Build speed and memory against the tokenizer's own speed, measured in the same run.

    python benchmarks/build_bench.py                                   # 939k conversations, --rows all, 1 and all cores
    python benchmarks/build_bench.py --conversations 200000 --rows 6400 --workers 2 --floor-threads 2
    taskset -c 0,1 python benchmarks/build_bench.py --conversations 200000 --rows 6400 --workers 2 --floor-threads 2 \
        --source-format parquet --turns 5                                # the recipe build on 2 cores, from parquet
    python benchmarks/build_bench.py --baseline-rows 6400 --workers 16 --reference-sample 0 --json-out r.json
    python benchmarks/build_bench.py --model gpt-oss-20b --baseline-rows 6400 --workers 16 --compare-backend

1. Generates (once, cached under ``benchmarks/.cache/``) a synthetic Tulu-schema source as a memory-mapped Arrow
   file: ``tools/synthetic/``'s conversations (row i depends only on (seed, i)), generated in parallel processes
   and written in order, so the file is the one ``write_synthetic_arrow`` writes.
2. Builds at 1 worker (the baseline: ``--baseline-rows``, default the same ``--rows``) and at each of ``--workers``,
   each in a subprocess: wall time, the build's own phase timings (``SFTPACK_TIMINGS``: start-up, the parent's
   wait for results, the writer thread, the workers' read/prepare/tokenize seconds), and each process's peak RSS and
   anonymous memory sampled from ``/proc/PID/status`` (``ru_maxrss`` would also count the pages a fork shares) and
   their PSS from ``smaps_rollup`` every 0.5 s (reading it costs CPU the build would otherwise have).
3. Floor: tiktoken ``encode_ordinary_batch`` with ``--floor-threads`` threads (default 1) over exactly the
   rendered texts the baseline consumed;
   and the CPU's own ceiling: the same texts split over P forked processes of 1 thread each (how far pure
   tokenization scales on this machine, whatever sftpack does).
4. Optionally the straightforward path on a sample (Jinja ``apply_chat_template`` + ``tokenizers`` offsets + a
   per-character mask), one process (needs ``../shared``; ``--reference-sample 0`` skips it).
5. ``--turns N``: instead of 2-4, the build at the first ``--workers`` count and the floor, N times in turns, after a
   first build that fills the caches: the median and spread of build / floor (``--source-format parquet``: from a
   parquet file, what the hub serves). The timed builds run without the memory sampler.
6. ``--compare-backend``: each measured build again with ``--tokenizer-backend tiktoken`` (the same bytes, checked),
   the baseline measured in the same run for the speed of the default backend.
Prints ratios: build / floor at 1 worker, parallel efficiency against 1 worker, memory peaks per process, and the
figures against their targets.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tools"))  # tools/synthetic/

MODEL = "Qwen3.5-122B-A10B"  # --model
# --rows all at 16 workers with tiktoken in every worker: results/build_bench/16_cores_tiktoken_in_every_worker.txt
EARLIER_MTOK_S = 22.0
TULU_SIZE = 939_000  # conversations in allenai/tulu-3-sft-mixture (939,343)
BATCH = 4096  # rows per record batch, as write_synthetic_arrow writes them


def _generate_batch(args) -> pa.RecordBatch:
    import synthetic

    seed, start, stop = args
    return synthetic.record_batch([synthetic.conversation(seed, i) for i in range(start, stop)])


def source_file(n: int, seed: int, cache: Path, procs: int) -> Path:
    from synthetic import SCHEMA

    path = cache / f"synthetic-{n}-{seed}.arrow"
    if not path.exists():
        t = time.perf_counter()
        tmp = path.with_suffix(".tmp")
        ranges = [(seed, a, min(a + BATCH, n)) for a in range(0, n, BATCH)]
        with mp.get_context("fork").Pool(procs) as pool, pa.OSFile(str(tmp), "wb") as sink, \
                pa.ipc.new_file(sink, SCHEMA) as writer:
            for batch in pool.imap(_generate_batch, ranges, chunksize=1):  # in order: the serial file's bytes
                writer.write_batch(batch)
        tmp.rename(path)
        print(f"generated {n:,} conversations in {time.perf_counter() - t:.1f} s with {procs} processes -> {path}",
              file=sys.stderr)
    return path


# ---------------------------------------------------------------------------------------------------------
# Memory: every process of the build, sampled from /proc


def _children(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return kids


_FIELDS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


def _kb_fields(path: str, keys: tuple) -> dict | None:
    """``keys`` of a /proc file of ``KEY: N kB`` lines, in bytes; None if the process is gone."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for key in keys:
        m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
        if m:
            out[key] = int(m.group(1)) * 1024
    return out


def _status(pid: int) -> dict | None:
    return _kb_fields(f"/proc/{pid}/status", _FIELDS)


_PSS_FIELDS = ("Pss", "Pss_Anon", "Pss_File", "Pss_Shmem")


def _pss(pid: int) -> dict:
    """Proportional set size (bytes), whole and by kind: each page divided among the processes sharing it, so
    that pages a forked worker shares with the parent (the tokenizer, copy-on-write) count once over all processes,
    where summing RssAnon counts them once per process. ``Pss_Anon`` (+ ``Pss_Shmem``) is the memory the build
    itself holds; ``Pss_File`` is mapped files (the memory-mapped source, libraries): page cache, which the
    kernel reclaims under pressure instead of failing the build."""
    return _kb_fields(f"/proc/{pid}/smaps_rollup", _PSS_FIELDS) or {}


class MemorySampler:
    """Peak VmRSS / RssAnon / RssFile of the build process and of every process below it, every ``interval``, and
    the peaks of the processes' PSS summed at one instant, each shared page counted once: ``pss_total``, every page
    (the memory-mapped source's too, while mapped), and ``pss_own``, anonymous and shared memory only: what the
    build allocates, the source's page cache left out. PSS is read every ``pss_every``-th sample only: reading
    ``smaps_rollup`` walks each process's page tables, 21 ms of CPU for a 2-worker build's 4 processes, which at
    every sample took 2.8 CPU-s from a 9 s build on 2 cores (its wall 1.2-1.5 s longer)."""

    def __init__(self, pid: int, interval: float = 0.02, pss_every: int = 25):
        self.pid, self.interval, self.pss_every = pid, interval, pss_every
        self.peaks: dict[int, dict] = {}
        self.pss_total = self.pss_own = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sample = 0
        while not self._stop.is_set():
            todo, seen = [self.pid], []
            while todo:
                pid = todo.pop()
                seen.append(pid)
                todo += _children(pid)
            if sample % self.pss_every == 0:
                pss = [_pss(pid) for pid in seen]
                self.pss_total = max(self.pss_total, sum(p.get("Pss", 0) for p in pss))
                self.pss_own = max(self.pss_own, sum(p.get("Pss_Anon", 0) + p.get("Pss_Shmem", 0) for p in pss))
            sample += 1
            for pid in seen:
                status = _status(pid)
                if status:
                    peak = self.peaks.setdefault(pid, {k: 0 for k in _FIELDS})
                    for k, v in status.items():
                        peak[k] = max(peak[k], v)
            self._stop.wait(self.interval)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        parent = self.peaks.get(self.pid, {})
        workers = [v for pid, v in self.peaks.items() if pid != self.pid]
        return {"parent": parent, "workers": workers, "pss_total": self.pss_total, "pss_own": self.pss_own,
                "workers_max": {k: max((w[k] for w in workers), default=0) for k in _FIELDS}}


_COMPILED: set = set()


def compiled(code: Path) -> None:
    """The checkout's bytecode (its ``__pycache__``, which git ignores), written once before its builds are timed: an
    installed sftpack has its bytecode (pip compiles it), and under PYTHONDONTWRITEBYTECODE=1 every build would
    compile the modules it imports from source (0.08 s a build)."""
    if code not in _COMPILED:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "sftpack")], check=True,
                       stdout=subprocess.DEVNULL)
        _COMPILED.add(code)


def run_build(source: Path, rows, workers: int, out: Path, backend: str = "auto", code: Path = HERE.parent,
              memory: bool = True) -> dict:
    """One build in a process of its own, with the sftpack of the checkout ``code`` (this one by default); its memory
    sampled from /proc unless ``memory`` is false (a build timed against a floor: the sampler takes CPU from it)."""
    timings = out / "timings.json"
    cmd = [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(source), "--rows", str(rows),
           "--out", str(out), "--workers", str(workers), "--overwrite", "--no-progress", "--tokenizer-backend", backend]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SFTPACK_TIMINGS": str(timings),
           "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")])}
    compiled(code)
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env, cwd=code)  # python -m puts the cwd first
    sampler = MemorySampler(proc.pid) if memory else None
    if proc.wait() != 0:
        raise SystemExit(f"build failed: {' '.join(cmd)}")
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the build and the workers it reaped
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    memory = sampler.stop() if sampler else None
    import yaml

    (path,) = out.glob("*.build.yaml")
    record = yaml.safe_load(path.read_text())
    return {"workers": workers, "rows_arg": rows, "backend": backend, "encoded_by": record.get("tokenizer_backends"), "wall_s": wall, "cpu_s": cpu, "rows": record["rows"],
            "tokens": record["counts"]["total_tokens"], "rows_sha256": record["rows_sha256"],
            "parquet_sha256": record["parquet_sha256"], "conversations": record["counts"]["conversations_packed"],
            "reached": record["counts"]["source_rows_reached"], "seed": record["seed"],
            "tail_tokens_dropped": record["counts"].get("tail_tokens_dropped"),
            "timings": json.loads(timings.read_text()), "memory": memory}


def _encoder():
    import sftpack

    return sftpack.get_encoder(MODEL)


def consumed_texts(source: Path, reached: int, seed: int) -> list[str]:
    """The rendered text of every conversation the build tokenized (kept ones, in order)."""
    from sftpack.builder.pipeline import permutation
    from sftpack.sources import open_source

    encoder = _encoder()
    src = open_source(str(source))
    order = permutation(len(src), seed)[:reached]
    texts = []
    for start in range(0, len(order), 4096):
        for item in src.take(order[start : start + 4096]):
            try:
                texts.append(encoder.render_text(item[1]))
            except Exception:
                pass
    return texts


def floor(texts: list[str], threads: int = 1) -> tuple[float, int]:
    """tiktoken's ``encode_ordinary_batch`` with ``threads`` threads over ``texts``: (seconds, tokens)."""
    enc = _encoder().vocab.enc
    enc.encode_ordinary_batch(texts[:200], num_threads=threads)  # warm up
    t = time.perf_counter()
    encoded = enc.encode_ordinary_batch(texts, num_threads=threads)
    return time.perf_counter() - t, sum(map(len, encoded))


_CEILING: list = []


def _encode_share(args) -> int:
    k, procs = args
    enc, texts = _CEILING
    return sum(map(len, enc.encode_ordinary_batch(texts[k::procs], num_threads=1)))


def ceiling(texts: list[str], procs: int) -> float:
    """Seconds for ``procs`` forked processes (1 thread each) to tokenize ``texts`` between them."""
    _CEILING[:] = [_encoder().vocab.enc, texts]
    with mp.get_context("fork").Pool(procs) as pool:
        pool.map(_encode_share, [(0, 1)] * procs)  # start and warm every process
        t = time.perf_counter()
        pool.map(_encode_share, [(k, procs) for k in range(procs)], chunksize=1)
        return time.perf_counter() - t


def straightforward(source: Path, n: int) -> tuple[float, int]:
    """Jinja template + tokenizers offsets + per-character mask, one process, on ``n`` conversations."""
    from helpers import SHARED
    from helpers.qwen_reference import build_qwen_tokenizer_dir, slime_qwen3_5_mask
    from transformers import AutoTokenizer

    from sftpack.sources import open_source

    template_file = SHARED / "fixtures" / "templates" / "qwen3_5.jinja"
    template = template_file.read_text() if template_file.exists() else None
    if template is None:
        raise SystemExit("needs ../shared/fixtures/templates/qwen3_5.jinja for the straightforward path")
    directory = build_qwen_tokenizer_dir(Path(tempfile.mkdtemp()) / "qwen", template)
    tok = AutoTokenizer.from_pretrained(str(directory))
    rows = open_source(str(source)).take(np.arange(n))
    t = time.perf_counter()
    total = 0
    for _, messages in rows:
        ids, _ = slime_qwen3_5_mask(tok, [{"role": m["role"], "content": m["content"]} for m in messages])
        total += len(ids)
    return time.perf_counter() - t, total


def _all_anon(memory: dict) -> int:
    """Anonymous memory of every process together (file pages of the memory-mapped source are shared)."""
    return memory["parent"].get("RssAnon", 0) + sum(w.get("RssAnon", 0) for w in memory["workers"])


def targets(results: dict) -> None:
    """The figures against their targets, each against a baseline measured in this run."""
    base, floor_s = results["baseline"], results["floor"]["seconds"]
    threads = results["floor"].get("threads", 1)
    print(f"\nFIGURES ({results['model']}, {results['cores']} cores):")
    if threads == 1:
        print(f"  1 worker, --rows {base['rows_arg']}: build / tiktoken 1-thread floor = {base['wall_s'] / floor_s:.3f}"
              "   (target <= 0.5)")
    for r in results["runs"]:
        if r["role"] == "baseline rows" or (threads > 1 and r["workers"] == threads and r["rows"] == base["rows"]):
            print(f"  {r['workers']} workers, --rows {r['rows_arg']}, backend {r['backend']}: build / tiktoken "
                  f"{threads}-thread floor = {r['wall_s'] / floor_s:.3f}" + ("   (target <= 0.6)" if threads == 2 else ""))
    measured = [r for r in results["runs"] if r["role"] == "measured"]
    forced = {r["workers"]: r for r in results["runs"] if r["role"] == "tiktoken backend"}
    for r in measured:
        if r["rows_arg"] != "all":
            continue
        rate = r["tokens"] / r["wall_s"] / 1e6
        peak = max([r["memory"]["parent"].get("VmRSS", 0), r["memory"]["workers_max"]["VmRSS"]])
        line = f"  {r['workers']} workers, --rows {r['rows_arg']}: {rate:.2f} Mtok/s"
        if r["workers"] in results["ceiling"]:  # as many tiktoken processes on the baseline's texts, this run, scaled
            tiktoken_s = results["ceiling"][r["workers"]] * r["tokens"] / base["tokens"]  # to this build's rows
            line += f" = {tiktoken_s / r['wall_s']:.2f}x {r['workers']} tiktoken processes on the same texts"
        line += f"; {rate / EARLIER_MTOK_S:.2f}x the earlier {EARLIER_MTOK_S:.0f} Mtok/s (target >= 2)"
        if r["workers"] in forced:
            f = forced[r["workers"]]
            line += f"; {f['wall_s'] / r['wall_s']:.2f}x this run's --tokenizer-backend tiktoken build ({f['wall_s']:.2f} s)"
        print(line)
        mem = r["memory"]
        print(f"    peak memory: the build's own (anonymous + shared PSS of all processes together) "
              f"{_gib(mem.get('pss_own', 0))} GiB (target <= 2 GB); with the mapped files' page cache (the source, "
              f"libraries) {_gib(mem.get('pss_total', 0))} GiB; largest process RSS {_gib(peak)} GiB; RssAnon summed "
              f"over processes, which counts the pages the workers share with the parent once each, "
              f"{_gib(_all_anon(mem))} GiB")
        print(f"    encoded by {r.get('encoded_by')}")


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f}"


def main() -> None:
    global MODEL
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="all", help="rows of the measured builds: a number or all (default: all)")
    ap.add_argument("--baseline-rows", default=None,
                    help="rows of the 1-worker baseline (default: --rows, the same build); a smaller number keeps a "
                         "long baseline affordable, and efficiency is then per token (steady state) plus an estimate")
    ap.add_argument("--conversations", type=int, default=TULU_SIZE)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", default=str(os.cpu_count()), help="comma-separated worker counts to measure")
    ap.add_argument("--ceiling", default=None, help="process counts for the tokenization ceiling (default: --workers)")
    ap.add_argument("--reference-sample", type=int, default=300, help="conversations for the straightforward path (0: skip)")
    ap.add_argument("--cache", default=str(HERE / ".cache"))
    ap.add_argument("--json-out", help="also write every figure here")
    ap.add_argument("--model", default=MODEL, help=f"the profile to build (default {MODEL})")
    ap.add_argument("--floor-threads", type=int, default=1, help="threads of the tiktoken floor (default 1)")
    ap.add_argument("--source-format", choices=["arrow", "parquet"], default="arrow",
                    help="build from the synthetic source as a memory-mapped Arrow file (default) or as one parquet "
                         "file (what the hub serves), written once beside it")
    ap.add_argument("--turns", type=int, default=0,
                    help="only the first --workers count's build and the tiktoken floor, N times in turns: each "
                         "turn's ratio, their median and spread")
    ap.add_argument("--compare-backend", action="store_true",
                    help="also build each measured build with --tokenizer-backend tiktoken (same bytes, checked)")
    args = ap.parse_args()
    MODEL = args.model
    _offline_o200k(cache_dir=Path(args.cache))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    source = source_file(args.conversations, args.seed, cache, os.cpu_count())
    if args.source_format == "parquet":
        source = parquet_copy(source)
    generate_s = time.perf_counter() - t
    counts = [int(w) for w in args.workers.split(",")]
    results: dict = {"conversations": args.conversations, "cores": len(os.sched_getaffinity(0)), "model": MODEL,
                     "generate_s": generate_s, "machine": _machine()}

    def save():
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(results, indent=1))

    base_rows = args.baseline_rows or args.rows
    out = Path(tempfile.mkdtemp(prefix="sftpack-bench-"))
    if args.turns:
        return turns(source, args, counts[0], out, results, save)
    base = results["baseline"] = run_build(source, base_rows, 1, out / "w1")
    save()
    texts = consumed_texts(source, base["reached"], base["seed"])
    floor_s, floor_tokens = floor(texts, args.floor_threads)
    results["floor"] = {"seconds": floor_s, "tokens": floor_tokens, "texts": len(texts), "threads": args.floor_threads}
    results["ceiling"] = {p: ceiling(texts, p) for p in [int(p) for p in (args.ceiling or args.workers).split(",")]}
    del texts
    save()
    runs = results["runs"] = []
    for w in counts:
        if str(base_rows) != str(args.rows):  # the same rows as the baseline, at w workers: bytes identical?
            same = run_build(source, base_rows, w, out / f"same{w}")
            runs.append({**same, "role": "baseline rows"})
            assert same["parquet_sha256"] == base["parquet_sha256"], f"--workers {w} wrote other bytes"
        runs.append({**run_build(source, args.rows, w, out / f"w{w}"), "role": "measured"})
        save()
        shutil.rmtree(out / f"w{w}", ignore_errors=True)  # gigabytes at --rows all
        if args.compare_backend:
            forced = run_build(source, args.rows, w, out / f"t{w}", backend="tiktoken")
            runs.append({**forced, "role": "tiktoken backend"})
            assert forced["parquet_sha256"] == runs[-2]["parquet_sha256"], "--tokenizer-backend tiktoken wrote other bytes"
            save()
            shutil.rmtree(out / f"t{w}", ignore_errors=True)
    if args.reference_sample:
        ref_s, ref_tokens = straightforward(source, args.reference_sample)
        results["straightforward_tokens_per_s"] = ref_tokens / ref_s
    report(results, args)
    save()


def parquet_copy(arrow: Path) -> Path:
    """The synthetic source as one parquet file (pyarrow's defaults), written once beside the Arrow file."""
    import pyarrow.parquet as pq

    path = arrow.with_suffix(".parquet")
    if not path.exists():
        tmp = path.with_suffix(".parquet.tmp")
        pq.write_table(pa.ipc.open_file(pa.memory_map(str(arrow))).read_all(), tmp)
        tmp.rename(path)
    return path


def turns(source: Path, args, workers: int, out: Path, results: dict, save) -> None:
    """The build at ``workers`` and the tiktoken floor on the texts it consumed, ``args.turns`` times in turns (a
    build, then the floor): each turn's build / floor, their median and spread. A build before the turns fills the
    caches a user's second build finds (the quicktok tables; a large parquet source's Arrow copy); its figures are
    printed apart."""
    first = run_build(source, args.rows, workers, out / "first")
    texts = consumed_texts(source, first["reached"], first["seed"])
    print(f"source: {args.conversations:,} synthetic conversations as {source.suffix[1:]} ({source.stat().st_size / 1e6:,.0f}"
          f" MB); {results['cores']} cores; {MODEL}; --workers {workers} --rows {args.rows}; floor: tiktoken "
          f"encode_ordinary_batch, {args.floor_threads} thread(s), the {len(texts):,} texts the build consumed")
    print(f"first build (the caches empty): wall {first['wall_s']:.2f} s, "
          + ", ".join(f"{k} {v:.2f}" for k, v in first["timings"]["parent"].items() if k.endswith("_s") and v >= 0.01))
    rounds = results["turns"] = []
    for k in range(args.turns):
        build = run_build(source, args.rows, workers, out / f"turn{k}", memory=False)
        assert build["rows_sha256"] == first["rows_sha256"], "a turn's build wrote other rows"
        floor_s, _ = floor(texts, args.floor_threads)
        rounds.append({"wall_s": build["wall_s"], "floor_s": floor_s, "timings": build["timings"]})
        parent = build["timings"]["parent"]
        start = ", ".join(f"{key} {parent[key]:.2f}" for key in ("open_source_s", "load_vocab_s", "loop_s") if key in parent)
        print(f"turn {k + 1}: build {build['wall_s']:.2f} s ({start}), floor {floor_s:.2f} s, "
              f"build / floor {build['wall_s'] / floor_s:.3f}", flush=True)
        save()
        shutil.rmtree(out / f"turn{k}", ignore_errors=True)
    ratios = sorted(r["wall_s"] / r["floor_s"] for r in rounds)
    print(f"\nFIGURE: --workers {workers} --rows {args.rows} from {source.suffix[1:]}, whole process, over the tiktoken "
          f"{args.floor_threads}-thread floor on the same texts: median of {len(ratios)} in turns "
          f"{float(np.median(ratios)):.3f} (min {ratios[0]:.3f}, max {ratios[-1]:.3f})")


def _offline_o200k(cache_dir: Path) -> None:
    """gpt-oss builds offline from tiktoken's cache: seed it with the hash-checked o200k_base ranks (as the tests do)."""
    if "gpt-oss" not in MODEL or "TIKTOKEN_CACHE_DIR" in os.environ:
        return
    from helpers.harmony_vocab import seed_caches

    tiktoken_cache, _ = seed_caches(cache_dir / "o200k")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tiktoken_cache)  # the builds' subprocesses inherit it


def _machine() -> dict:
    info = {}
    try:
        info["lscpu"] = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        pass
    info["affinity"] = len(os.sched_getaffinity(0))
    return info


def report(results: dict, args) -> None:
    base = results["baseline"]
    bt = base["timings"]["parent"]
    base_loop = bt["loop_s"]
    base_start = base["wall_s"] - base_loop - bt.get("close_s", 0) - bt.get("commit_s", 0)
    floor_s = results["floor"]["seconds"]
    print(f"source: {results['conversations']:,} synthetic Tulu-schema conversations; {results['cores']} cores; "
          f"MODEL {MODEL}")
    print(f"baseline: --workers 1 --rows {base['rows_arg']}: {base['rows']:,} rows, {base['tokens']:,} tokens, "
          f"{base['conversations']:,} conversations, wall {base['wall_s']:.2f} s (start-up {base_start:.2f} s, "
          f"loop {base_loop:.2f} s)")
    threads = results["floor"].get("threads", 1)
    print(f"floor: tiktoken encode_ordinary_batch, {threads} thread(s), same {results['floor']['texts']:,} texts: "
          f"{floor_s:.2f} s")
    print(f"build / floor at 1 worker (whole process)     {base['wall_s'] / floor_s:.3f}")
    print(f"build / floor at 1 worker (packing loop only) {base_loop / floor_s:.3f}")
    print(f"encoded by: {base.get('encoded_by')}")
    rate1 = base["tokens"] / base["wall_s"]
    rate1_loop = base["tokens"] / base_loop
    print(f"\n{'workers':>7} {'backend':>8} {'rows':>8} {'tokens':>13} {'wall s':>8} {'Mtok/s':>7} {'eff':>6} "
          f"{'eff loop':>8} {'eff est.':>8} {'parent':>22} {'worker max':>22} {'all':>14}")
    print(f"{'':>7} {'':>8} {'':>8} {'':>13} {'':>8} {'':>7} {'':>6} {'':>8} {'':>8} {'RSS / anon GiB':>22} "
          f"{'RSS / anon GiB':>22} {'own / PSS GiB':>14}")
    for r in [base] + results["runs"]:
        w = r["workers"]
        loop = r["timings"]["parent"]["loop_s"]
        eff = (r["tokens"] / r["wall_s"]) / (w * rate1)
        eff_loop = (r["tokens"] / loop) / (w * rate1_loop)
        # the 1-worker build of the same size, estimated: its start-up + its loop scaled to these tokens
        est = (base_start + base_loop * r["tokens"] / base["tokens"]) / (w * r["wall_s"]) if r is not base else 1.0
        p, m = r["memory"]["parent"], r["memory"]["workers_max"]
        print(f"{w:>7} {r.get('backend', 'auto'):>8} {r['rows']:>8,} {r['tokens']:>13,} {r['wall_s']:>8.2f} "
              f"{r['tokens'] / r['wall_s'] / 1e6:>7.2f} {eff:>6.1%} {eff_loop:>8.1%} {est:>8.1%} "
              f"{_gib(p.get('VmRSS', 0)) + ' / ' + _gib(p.get('RssAnon', 0)):>22} "
              f"{_gib(m['VmRSS']) + ' / ' + _gib(m['RssAnon']):>22} "
              f"{_gib(r['memory'].get('pss_own', 0)) + ' / ' + _gib(r['memory'].get('pss_total', 0)):>14}")
    print("(eff = tokens/s over workers x the 1-worker tokens/s, whole process; eff loop = the same over the packing "
          "loop; eff est. = the estimated 1-worker wall of this build over workers x this wall; targets: >= 60% at 16,"
          " anon <= 1 GiB and RSS <= 2 GiB per process)")
    measured = {r["parquet_sha256"] for r in results["runs"] if r["role"] != "baseline rows"}
    print(f"--rows {args.rows} parquet identical at every worker count and backend: {len(measured) == 1}")
    print("\nwhere the time goes (seconds; CPU = user+sys of the build and its workers; main busy = packing loop minus"
          " waiting for workers' results, writer busy = compress + write + hash in the writer thread, both as a share"
          " of the loop):")
    for r in [base] + results["runs"]:
        t = r["timings"]
        p = t["parent"]
        loop = p["loop_s"]
        main_busy = (loop - p.get("result_wait_s", 0)) / loop
        writer_busy = (p["writer_write_s"] + p["writer_hash_s"]) / loop
        parent = ", ".join(f"{k} {v:.2f}" for k, v in p.items())
        work = ", ".join(f"{k} {v:.1f}" for k, v in t["workers_total"].items())
        n = results["cores"]  # user+sys of the build and its workers, as a share of every core for the whole wall
        cores = f"CPU {r['cpu_s']:.1f} s = {r['cpu_s'] / (r['wall_s'] * n):.0%} of {n} cores, " if "cpu_s" in r else ""
        print(f"  --workers {r['workers']} --rows {r['rows_arg']}: {cores}main busy {main_busy:.0%}, writer busy "
              f"{writer_busy:.0%}; {parent}; workers' total: {work}")
    one = results["floor"]["seconds"]
    print("\ntokenization ceiling of this CPU (same texts, P processes x 1 thread): "
          + ", ".join(f"P={p}: {one / s:.2f}x ({one / s / p:.0%})" for p, s in results["ceiling"].items()))
    targets(results)
    if "straightforward_tokens_per_s" in results:
        print(f"speed-up over the straightforward path (1 worker): {rate1 / results['straightforward_tokens_per_s']:.1f}x")
    print(json.dumps({"baseline_wall_s": base["wall_s"], "floor_s": floor_s, "rows_sha256": base["rows_sha256"],
                      "runs": [(r["workers"], r["rows"], r["wall_s"], r["rows_sha256"]) for r in results["runs"]]}))


if __name__ == "__main__":
    main()
