"""What one build worker spends per conversation, step by step, and the build's packer after it, for this code and
(``--against DIR``) another checkout, measured in the same run.

    python benchmarks/worker_stages.py --against /path/to/other/checkout
    python benchmarks/worker_stages.py --model gpt-oss-20b --conversations 16384 --repeats 5

Reads ``--conversations`` rows of a synthetic Tulu-schema source (``build_bench.py``'s, cached under
``benchmarks/.cache/``) in the build's permutation order, and runs the worker's three steps on each chunk one after
the other, in this process (``sftpack.builder.chunks``: read and prepare, the engines' calls, the ids and the mask).
Prints, best of ``--repeats`` passes in each of ``--rounds`` processes per checkout (the checkouts taking turns),
the microseconds per conversation of each step as the build's own timers measure them, the whole pass by the wall
clock and by the process's CPU time, then the parent's packing of the pass's results into rows of the recipe's
8,192 tokens (``pack``: the walk that counts what was reached, and ``pack_chunks``; the rows are not written) and,
in seconds, the start-up's loading of the vocabulary and the tokenizer engines; the same for the other checkout (a
subprocess with that checkout first on ``sys.path``), then the ratios this / other. The engines' step is the baseline the others are read against: it is
what an exact tokenizer cannot avoid. On a shared machine a step of unchanged code moves by up to 10% from run to
run (``benchmarks/results/worker_stages/2_core_machine.txt``): read only larger ratios as a change's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("read", "prepare", "engines", "finish", "whole", "cpu", "pack")


def measure(model: str, source: str, conversations: int, repeats: int) -> dict:
    import numpy as np

    from sftpack.builder.chunks import finish_chunk, prepare_chunk, tokenize_chunk
    from sftpack.builder.config import DEFAULTS
    from sftpack.families.encode import get_encoder
    from sftpack.builder.pack import pack_chunks
    from sftpack.builder.pipeline import CHUNK, permutation
    from sftpack.builder.walk import Walk
    from sftpack.builder.record import BuildStats
    from sftpack.sources import open_source

    t = time.perf_counter()
    encoder = get_encoder(model)
    encoder.vocab.use_backend("auto")
    startup = time.perf_counter() - t
    src = open_source(source)
    order = permutation(len(src), 42)[:conversations]
    chunks = [order[i:i + CHUNK] for i in range(0, len(order), CHUNK)]
    best = None
    for _ in range(repeats):
        seconds = np.zeros(4)
        results = []
        start, cpu = time.perf_counter(), time.process_time()
        for chunk in chunks:
            results.append(finish_chunk(encoder, tokenize_chunk(encoder, prepare_chunk(encoder, src, chunk))))
            seconds += results[-1].seconds
        whole, cpu = time.perf_counter() - start, time.process_time() - cpu
        t = time.perf_counter()
        stats = BuildStats()
        walk = Walk(stats)
        for _ in pack_chunks((walk.add(r) for r in results), DEFAULTS["row_tokens"], encoder.vocab.eos_id, stats,
                             walk.pulled):
            pass
        pack = time.perf_counter() - t
        row = [*(seconds / len(order) * 1e6), whole / len(order) * 1e6, cpu / len(order) * 1e6, pack / len(order) * 1e6]
        best = row if best is None else [min(a, b) for a, b in zip(best, row)]
    return {**dict(zip(STEPS, best)), "startup": startup}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Qwen3.5-122B-A10B", help="the profile whose worker is measured")
    ap.add_argument("--conversations", type=int, default=16384, help="conversations a pass encodes")
    ap.add_argument("--source-size", type=int, default=200_000, help="conversations in the synthetic source")
    ap.add_argument("--repeats", type=int, default=3, help="passes over the conversations in each process")
    ap.add_argument("--rounds", type=int, default=3, help="processes per checkout, the checkouts taking turns")
    ap.add_argument("--against", help="another checkout of sftpack (its root) to measure in the same run")
    ap.add_argument("--cache", default=str(HERE / ".cache"), help="where the synthetic source is kept")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--source", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        print(json.dumps(measure(args.model, args.source, args.conversations, args.repeats)))
        return
    sys.path.insert(0, str(HERE))
    from build_bench import source_file

    Path(args.cache).mkdir(parents=True, exist_ok=True)
    source = source_file(args.source_size, 1, Path(args.cache), os.cpu_count() or 1)
    runs = {"this": HERE.parent}
    if args.against:
        runs["other"] = Path(args.against).resolve()
    results: dict = {}
    for _ in range(args.rounds):  # the checkouts in turn, each round: a busy spell of the machine hits both
        for name, root in runs.items():  # each in a fresh process, with its own code first on the path
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--model", args.model, "--source",
                   str(source), "--conversations", str(args.conversations), "--repeats", str(args.repeats)]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
            out = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, check=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            results[name] = {k: min(v, results.get(name, got)[k]) for k, v in got.items()}
    print(f"{args.model}, {args.conversations:,} conversations, best of {args.repeats} passes x {args.rounds} rounds: "
          "microseconds a conversation")
    print(f"{'':8s}" + "".join(f"{s:>10s}" for s in STEPS) + f"{'(others)/engines':>18s}{'start-up s':>12s}")
    for name, r in results.items():
        python = r["read"] + r["prepare"] + r["finish"]
        print(f"{name:8s}" + "".join(f"{r[s]:10.1f}" for s in STEPS) + f"{python / r['engines']:18.2f}"
              f"{r['startup']:12.3f}")
    if "other" in results:
        this, other = results["this"], results["other"]
        print(f"{'ratio':8s}" + "".join(f"{this[s] / other[s]:10.2f}" for s in STEPS) + f"{'':18s}"
              f"{this['startup'] / other['startup']:12.2f}   (this / other)")


if __name__ == "__main__":
    main()
