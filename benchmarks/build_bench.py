"""Build speed against the tokenizer's own speed, measured in the same run (issue 6).

    python benchmarks/build_bench.py                 # full recipe build: 6,400 x 8,192 rows
    python benchmarks/build_bench.py --rows 640      # quicker

1. Generates (once, cached) a large synthetic Tulu-schema source (default 200,000 conversations, seeded) as a
   memory-mapped Arrow file.
2. Runs ``sftpack build`` on it in a subprocess (wall time, peak RSS of the build process and of its workers).
3. Floor: tiktoken ``encode_ordinary_batch`` with 2 threads over exactly the rendered texts the build consumed.
4. Straightforward path on a sample: the tokenizer's Jinja ``apply_chat_template`` + ``tokenizers`` offsets +
   a per-character mask (slime's qwen3_5 algorithm), one process.
Prints build/floor, tokens/s and the speed-up over the straightforward path.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tools"))  # tools/synthetic.py

MODEL = "Qwen3.5-122B-A10B"


def source_file(n: int, seed: int, cache: Path) -> Path:
    from synthetic import write_synthetic_arrow

    path = cache / f"synthetic-{n}-{seed}.arrow"
    if not path.exists():
        t = time.perf_counter()
        tmp = path.with_suffix(".tmp")
        write_synthetic_arrow(tmp, n, seed=seed)
        tmp.rename(path)
        print(f"generated {n:,} conversations in {time.perf_counter() - t:.1f} s -> {path}", file=sys.stderr)
    return path


def run_build(source: Path, rows: int, workers: int, out: Path) -> tuple[float, dict, int]:
    cmd = [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(source), "--rows", str(rows),
           "--out", str(out), "--workers", str(workers), "--overwrite", "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - t
    peak_kb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    import yaml

    record = yaml.safe_load((out / "qwen35-tulu3-fixed8192-v1.build.yaml").read_text())
    return wall, record, peak_kb * 1024


def consumed_texts(source: Path, record: dict) -> list[str]:
    """The rendered text of every conversation the build tokenized (kept ones, in order)."""
    from sftpack.pipeline import permutation
    from sftpack.conversation import Skip, check_messages
    from sftpack.render.qwen3_5 import render
    from sftpack.source import open_source

    src = open_source(str(source))
    order = permutation(len(src), record["seed"])[: record["counts"]["source_rows_reached"]]
    texts = []
    for start in range(0, len(order), 4096):
        for _, messages in src.take(order[start : start + 4096]):
            try:
                texts.append(render(check_messages(messages)).text)
            except Exception:
                pass
    return texts


def floor(texts: list[str]) -> tuple[float, int]:
    from sftpack.vocab import load_offline_qwen

    enc = load_offline_qwen().enc
    enc.encode_ordinary_batch(texts[:200], num_threads=2)  # warm up
    t = time.perf_counter()
    encoded = enc.encode_ordinary_batch(texts, num_threads=2)
    return time.perf_counter() - t, sum(map(len, encoded))


def straightforward(source: Path, n: int) -> tuple[float, int]:
    """Jinja template + tokenizers offsets + per-character mask, one process, on ``n`` conversations."""
    from transformers import AutoTokenizer

    from conftest import TEMPLATES
    from qwen_reference import build_qwen_tokenizer_dir, slime_qwen3_5_mask
    from sftpack.source import open_source

    template = (TEMPLATES / "qwen3_5.jinja").read_text() if (TEMPLATES / "qwen3_5.jinja").exists() else None
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=6400)
    ap.add_argument("--conversations", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--reference-sample", type=int, default=300, help="conversations for the straightforward path")
    ap.add_argument("--cache", default=str(HERE / ".cache"))
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    source = source_file(args.conversations, args.seed, cache)

    out = Path(tempfile.mkdtemp(prefix="sftpack-bench-"))
    wall, record, peak = run_build(source, args.rows, args.workers, out)
    tokens = record["counts"]["total_tokens"]
    texts = consumed_texts(source, record)
    floor_s, floor_tokens = floor(texts)
    ref_s, ref_tokens = straightforward(source, args.reference_sample)
    build_rate, floor_rate, ref_rate = tokens / wall, floor_tokens / floor_s, ref_tokens / ref_s
    # The build tokenizes every conversation it reaches in full; compare like with like: tokens tokenized.
    print(f"source: {args.conversations:,} synthetic conversations; build: {args.rows:,} rows x {record['row_tokens']:,} "
          f"tokens, {len(texts):,} conversations, workers {args.workers}, {os.cpu_count()} cores")
    print(f"{'path':<44} {'wall s':>8} {'tokens/s':>12}")
    print(f"{'sftpack build (end to end, subprocess)':<44} {wall:>8.2f} {build_rate:>12,.0f}")
    print(f"{'floor: tiktoken encode_ordinary_batch x2':<44} {floor_s:>8.2f} {floor_rate:>12,.0f}")
    print(f"{'straightforward: Jinja + offsets + char mask':<44} {'':>8} {ref_rate:>12,.0f}")
    print(f"build / floor (wall)                         {wall / floor_s:.2f}   (target <= 1.3)")
    print(f"speed-up over straightforward path           {build_rate / ref_rate:.1f}x (target >= 10)")
    print(f"peak RSS of one build process                {peak / 2**30:.2f} GiB (target <= 2)")
    print(json.dumps({"wall_s": wall, "floor_s": floor_s, "ratio": wall / floor_s, "build_tokens_per_s": build_rate,
                      "floor_tokens_per_s": floor_rate, "straightforward_tokens_per_s": ref_rate,
                      "peak_rss_bytes": peak, "rows_sha256": record["rows_sha256"]}))


if __name__ == "__main__":
    main()
