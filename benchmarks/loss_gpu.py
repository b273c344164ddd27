"""GPU evidence for ``sftpack loss``: chunked LM head vs the naive full-logits computation, and an fp64 check.

On rows built by ``sftpack build`` and a random-initialised model of realistic shape (Qwen3 architecture, the
real Qwen3.5 vocabulary of 248,077 tokens, hidden 2,048, a few layers, bf16), this

1. runs the real command, ``python -m sftpack loss --model DIR --rows ROWS --limit N --device cuda --json``,
   and reports its loss, tokens/s and peak GPU memory;
2. runs the naive computation - Hugging Face's own ``model(input_ids, labels=labels)`` (full bf16 logits, upcast
   to fp32 inside its loss) - at batch sizes 1, 4, 8, ... until it runs out of memory, reporting tokens/s and
   peak memory, and its loss over the same rows;
3. on a slice of rows, checks the chunked loss against fp64 references: (a) the same bf16 hidden states with the
   LM head and cross-entropy in fp64 over full logits (isolates the chunked head), (b) the whole model in fp64;
4. ``--head-shapes``: the LM head + cross-entropy of one 8,192-token row (every position a target, chunks of 1,024)
   alone, compiled and eager, as TFLOP/s (2 x tokens x hidden x vocab) against an 8192^3 bf16 matmul timed in the
   same run, with the extra peak memory of the row and the compiled loss against the eager one;
5. ``--split SPEC`` (repeatable): ``sftpack loss --device-map auto --max-memory SPEC`` on the first ``--split-rows``
   rows against the unsharded ``--device cuda`` run on the same rows (loss, tokens/s, peak memory per GPU, placement).

    python benchmarks/loss_gpu.py --rows ROWS.parquet [--limit 128] [--split 0=2.1GiB,cpu=50GiB]
        [--out benchmarks/results/loss_gpu/h200.txt]

Rows: ``sftpack build --model Qwen3.5-122B-A10B --source sample --rows 128 --out DIR`` (needs the tokenizer,
so build them where sftpack is installed and carry the parquet).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LINES: list[str] = []
DEVICE = "cuda"


def _cuda() -> bool:
    return DEVICE.startswith("cuda")


def sync() -> None:
    import torch

    if _cuda():
        torch.cuda.synchronize()


def reset_peak() -> None:
    import torch

    if _cuda():
        torch.cuda.reset_peak_memory_stats()


def peak_gib(value=None) -> str:
    import torch

    if not _cuda():
        return "-"
    return f"{(torch.cuda.max_memory_allocated() if value is None else value) / 2**30:.2f}"


def free() -> None:
    import torch

    gc.collect()
    if _cuda():
        torch.cuda.empty_cache()


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def make_model(model_dir: Path, args) -> None:
    """A random-initialised Qwen3-architecture causal LM, bf16, saved with save_pretrained."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.hidden // 128, num_key_value_heads=min(8, args.hidden // 128),
                         head_dim=128, max_position_embeddings=32768, tie_word_embeddings=False)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(DEVICE):
        model = Qwen3ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(model_dir)
    say(f"model: Qwen3ForCausalLM, random init (seed 0), vocab {args.vocab:,}, hidden {args.hidden:,}, "
        f"{args.layers} layers, intermediate {args.intermediate:,}, {params / 1e9:.2f} B parameters, bf16")
    del model
    free()


def naive_hf(model, tokens, mask, batch: int, rows: int) -> dict:
    """HF's own loss over ``rows`` rows, ``batch`` rows per forward: full logits; per-token mean over targets."""
    import torch

    labels_all = torch.as_tensor(tokens, dtype=torch.long).clone()
    labels_all[torch.as_tensor(mask) == 0] = -100
    ids_all = torch.as_tensor(tokens, dtype=torch.long)
    total, count = 0.0, 0
    with torch.inference_mode():  # warm-up on one row
        model(input_ids=ids_all[:1].to(DEVICE), labels=labels_all[:1].to(DEVICE))
    sync()
    reset_peak()
    start = time.perf_counter()
    with torch.inference_mode():
        for s in range(0, rows, batch):
            ids, labels = ids_all[s : s + batch].to(DEVICE), labels_all[s : s + batch].to(DEVICE)
            out = model(input_ids=ids, labels=labels)  # HF shifts the labels itself: target t from position t-1
            n = int((labels[:, 1:] != -100).sum())
            total += float(out.loss) * n
            count += n
            del out
    sync()
    seconds = time.perf_counter() - start
    return {"loss": total / count, "tokens_per_second": rows * tokens.shape[1] / seconds,
            "peak": torch.cuda.max_memory_allocated() if _cuda() else None, "rows": rows, "seconds": seconds}


def fp64_head_reference(model, tokens, mask) -> float:
    """bf16 hidden states (as the chunked path gets them), then LM head + cross-entropy in fp64 over full logits."""
    import torch

    from sftpack.trainer.loss import decoder_of, hidden_states

    decoder, weight = decoder_of(model), model.get_output_embeddings().weight.double()
    total, count = 0.0, 0
    with torch.inference_mode():
        for t, m in zip(tokens, mask):
            ids = torch.as_tensor(t, dtype=torch.long, device=DEVICE)
            logits = hidden_states(decoder, ids).double() @ weight.T  # [row_tokens, vocab] fp64
            labels = ids.clone()
            labels[torch.as_tensor(m, device=DEVICE) == 0] = -100
            total += float(torch.nn.functional.cross_entropy(logits[:-1], labels[1:], ignore_index=-100, reduction="sum"))
            count += int(m[1:].sum())
            del logits
    return total / count


def fp64_model_reference(model, tokens, mask) -> float:
    """The whole model in fp64 (weights upcast from bf16), full logits, fp64 cross-entropy."""
    import torch

    total, count = 0.0, 0
    with torch.inference_mode():
        for t, m in zip(tokens, mask):
            ids = torch.as_tensor(t, dtype=torch.long, device=DEVICE)[None]
            labels = ids.clone()
            labels[torch.as_tensor(m, device=DEVICE)[None] == 0] = -100
            logits = model(input_ids=ids).logits[0]
            total += float(torch.nn.functional.cross_entropy(logits[:-1], labels[0, 1:], ignore_index=-100, reduction="sum"))
            count += int(m[1:].sum())
            del logits
    return total / count


def timed(fn, warmup: int, iters: int) -> float:
    """Median seconds of ``fn()`` over ``iters`` calls after ``warmup`` calls, synchronised."""
    import statistics

    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_tflops() -> float:
    """An 8192^3 bf16 matmul, the same GPU's reference rate."""
    import torch

    a = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEVICE, dtype=torch.bfloat16)
    seconds = timed(lambda: a @ b, 3, 10)
    del a, b
    free()
    return 2 * 8192**3 / seconds / 1e12


def head_bench(vocab: int, hidden: int, softcap: float | None, matmul: float, tokens: int = 8192, chunk: int = 1024) -> None:
    """One row's LM head + CE through sftpack.trainer.head.ChunkLoss, compiled and eager, against the matmul rate."""
    import torch

    from sftpack.trainer.head import ChunkLoss, Head

    torch.manual_seed(0)
    linear = torch.nn.Linear(hidden, vocab, bias=False, device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        linear.weight.normal_(0, 2 * hidden**-0.5)  # logits of std ~2: a peaked softmax, as a trained head gives
    x = torch.randn(tokens, hidden, device=DEVICE, dtype=torch.bfloat16)
    t = torch.randint(0, vocab, (tokens,), device=DEVICE)
    head = Head(linear, softcap, 1.0)
    flops = 2 * tokens * hidden * vocab
    label = f"{vocab:,} x {hidden:,}" + (f", soft-cap {softcap:g}" if softcap else "")

    def row(loss):
        total = 0.0
        for s in range(0, tokens, chunk):
            total = total + loss(x[s : s + chunk], t[s : s + chunk])
        return total

    with torch.inference_mode():  # the head module's own matmul: [chunk, vocab] outputs, misaligned at an odd vocab
        floor = timed(lambda: [linear(x[s : s + chunk]) for s in range(0, tokens, chunk)], 2, 10)
        out = {}
        for mode in ("no", "yes"):
            loss = ChunkLoss(head, mode, torch.device(DEVICE), "bfloat16")
            seconds = timed(lambda: row(loss), 3, 10)
            sync()
            base = torch.cuda.memory_allocated()
            reset_peak()
            value = float(row(loss))
            extra = torch.cuda.max_memory_allocated() - base
            out[mode] = (seconds, value, extra, loss.ran, loss.note)
            free()
    (es, ev, ee, _, _), (cs, cv, ce, ran, note) = out["no"], out["yes"]
    say(f"{label:<32} {'head matmul only':<22} {floor * 1e3:>8.2f} {flops / floor / 1e12:>8.1f} {flops / floor / 1e12 / matmul:>7.1%}")
    say(f"{'':<32} {'eager':<22} {es * 1e3:>8.2f} {flops / es / 1e12:>8.1f} {flops / es / 1e12 / matmul:>7.1%} "
        f"{ee / 2**30:>9.2f} {ev / tokens:>11.7f}")
    say(f"{'':<32} {ran + (' (' + note + ')' if ran != 'compiled' else ''):<22} {cs * 1e3:>8.2f} {flops / cs / 1e12:>8.1f} "
        f"{flops / cs / 1e12 / matmul:>7.1%} {ce / 2**30:>9.2f} {cv / tokens:>11.7f}  vs eager {abs(cv - ev) / abs(ev):.1e}")
    del linear, x, t
    free()


def cli(model_dir: Path, rows: str, limit: int, *extra: str) -> dict:
    """``python -m sftpack loss ... --json`` in a subprocess (the real command), its result."""
    command = [sys.executable, "-m", "sftpack", "loss", "--model", str(model_dir), "--rows", rows, "--limit", str(limit),
               "--dtype", "bfloat16", "--chunk", "1024", "--json", *extra]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    if run.returncode != 0:
        say(run.stderr.strip()[-2000:])
        raise SystemExit(f"sftpack loss {' '.join(extra)} failed with exit code {run.returncode}")
    return json.loads(run.stdout)


def peaks(result: dict) -> str:
    return ", ".join(f"{d} {b / 2**30:.2f} GiB" for d, b in (result.get("peak_gpu_memory_by_gpu") or {}).items()) or "-"


def split_runs(model_dir: Path, rows: str, n: int, specs: list[str]) -> None:
    """The sharded command under each --max-memory SPEC against the unsharded one, same rows."""
    base = cli(model_dir, rows, n, "--device", DEVICE)
    say(f"\nforced splits, first {n} rows, against the unsharded run (--device {DEVICE}, head + CE {base['head_ce']}):")
    say(f"  unsharded: loss {base['loss']:.8f}, {base['tokens_per_second']:,.0f} tokens/s, peak {peaks(base)}")
    for spec in specs:
        try:
            got = cli(model_dir, rows, n, "--device-map", "auto", "--max-memory", spec)
        except SystemExit as e:  # one failed spec should not cost the sections after it
            say(f"  --device-map auto --max-memory {spec}: {e}")
            continue
        say(f"  --device-map auto --max-memory {spec}: loss {got['loss']:.8f}, relative difference "
            f"{abs(got['loss'] - base['loss']) / base['loss']:.2e}, {got['tokens_per_second']:,.0f} tokens/s, "
            f"peak {peaks(got)}, head + CE {got['head_ce']}")
        for line in got["placement"]:
            say(f"      {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="rows parquet written by sftpack build")
    ap.add_argument("--limit", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=248_077)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=6144)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--naive-batches", default="1,4,8,16", help="batch sizes for the naive computation")
    ap.add_argument("--naive-rows", type=int, default=32, help="rows per naive measurement above batch 1")
    ap.add_argument("--check-rows", type=int, default=2, help="rows of the fp64 checks")
    ap.add_argument("--head-shapes", default="248077x2048,248077x3072,262144x2816:30",
                    help="VOCABxHIDDEN[:SOFTCAP],... for the head + CE benchmark ('' to skip)")
    ap.add_argument("--split", action="append", default=[], metavar="SPEC", help="--max-memory of a forced split to "
                    "compare with the unsharded run (repeatable)")
    ap.add_argument("--split-rows", type=int, default=32, help="rows of the split comparison")
    ap.add_argument("--device", default="cuda", help="cuda (default); cpu only to try the script with a small model")
    ap.add_argument("--out", help="also write the report here")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device

    import torch
    import transformers
    from transformers.utils import logging as hf_logging

    from sftpack.trainer.loss import step0_loss

    hf_logging.disable_progress_bar()
    from sftpack.rows import read_rows, rows_sha256_of

    gpu = torch.cuda.get_device_name() if _cuda() else "cpu"
    say(f"sftpack loss on {gpu}; torch {torch.__version__}, transformers {transformers.__version__}")
    tokens, mask = read_rows(args.rows, slice(0, args.limit))
    say(f"rows: {args.rows}, first {len(tokens)} rows x {tokens.shape[1]:,} tokens, "
        f"{int(mask[:, 1:].sum()):,} supervised targets, rows_sha256 {rows_sha256_of(tokens, mask)}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if args.head_shapes:
        matmul = matmul_tflops()
        say(f"\nLM head + cross-entropy of one 8,192-token row (all positions targets, chunks of 1,024), bf16; "
            f"8192^3 bf16 matmul in this run: {matmul:.1f} TFLOP/s")
        say(f"{'vocab x hidden':<32} {'path':<22} {'ms':>8} {'TFLOP/s':>8} {'/matmul':>7} {'extra GiB':>9} {'loss/token':>11}")
        for shape in args.head_shapes.split(","):
            dims, _, cap = shape.partition(":")
            vocab, hidden = (int(v) for v in dims.split("x"))
            head_bench(vocab, hidden, float(cap) if cap else None, matmul)
        write(args.out)
    with tempfile.TemporaryDirectory(prefix="sftpack-loss-gpu-") as tmp:
        model_dir = Path(tmp) / "model"
        make_model(model_dir, args)

        # 1. The real command, compiled (the default on CUDA) and eager.
        say(f"\n$ sftpack loss --model <random Qwen3 model> --rows ROWS --limit {args.limit} --device {DEVICE} --dtype bfloat16 --json")
        cli_run = cli(model_dir, args.rows, args.limit, "--device", DEVICE)
        eager_run = cli(model_dir, args.rows, args.limit, "--device", DEVICE, "--compile", "no")
        for label, r in (("chunked (sftpack loss)", cli_run), ("same, --compile no", eager_run)):
            say(f"{label}: loss {r['loss']:.8f}, {r['tokens_per_second']:,.0f} tokens/s ({r['seconds']:.2f} s for "
                f"{r['rows']} rows), peak GPU memory {peak_gib(r['peak_gpu_memory_bytes'])} GiB, head + CE {r['head_ce']} "
                f"({r['head_ce_note']}), head self-check {r['head_check']:.2g}")
        say(f"compiled vs eager: loss relative difference {abs(cli_run['loss'] - eager_run['loss']) / eager_run['loss']:.2e}, "
            f"speed {cli_run['tokens_per_second'] / eager_run['tokens_per_second']:.2f}x")
        cli_peak = cli_run["peak_gpu_memory_bytes"]
        if args.split:
            split_runs(model_dir, args.rows, min(args.split_rows, len(tokens)), args.split)
        write(args.out)

        # 2. The naive computation, in this process.
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(DEVICE).eval()
        weights = torch.cuda.memory_allocated() if _cuda() else None
        say(f"\nmodel weights on the GPU: {peak_gib(weights)} GiB")
        say(f"{'computation':<42} {'rows':>5} {'tokens/s':>10} {'peak GiB':>9} {'loss':>10}")
        say(f"{'chunked, sftpack loss (batch 1, chunk 1024)':<42} {cli_run['rows']:>5} {cli_run['tokens_per_second']:>10,.0f} "
            f"{peak_gib(cli_peak):>9} {cli_run['loss']:>10.6f}")
        naive = {}
        for batch in [int(b) for b in args.naive_batches.split(",") if b]:
            rows = len(tokens) if batch == 1 else min(len(tokens), max(args.naive_rows, batch))
            label = f"naive HF model(ids, labels=...), batch {batch}"
            try:
                r = naive_hf(model, tokens, mask, batch, rows)
            except torch.OutOfMemoryError:
                free()
                say(f"{label:<42} {rows:>5} {'out of GPU memory':>21}")
                break
            naive[batch] = r
            say(f"{label:<42} {rows:>5} {r['tokens_per_second']:>10,.0f} {peak_gib(r['peak']):>9} {r['loss']:>10.6f}")
            free()
        if 1 in naive:
            say(f"same {len(tokens)} rows: chunked {cli_run['loss']:.6f} vs naive {naive[1]['loss']:.6f} "
                f"(difference {cli_run['loss'] - naive[1]['loss']:+.2e})")
            if _cuda():
                say(f"memory above the weights: chunked {(cli_peak - weights) / 2**30:.2f} GiB vs naive batch 1 "
                    f"{(naive[1]['peak'] - weights) / 2**30:.2f} GiB; speed chunked / naive batch 1: "
                    f"{cli_run['tokens_per_second'] / naive[1]['tokens_per_second']:.2f}x")

        # 3. fp64 references on a slice.
        n = min(args.check_rows, len(tokens))
        if n:  # --check-rows 0 skips it
            chunked = step0_loss(model, tokens[:n], mask[:n], dtype="bfloat16")["loss"]
            head64 = fp64_head_reference(model, tokens[:n], mask[:n])
            model = model.double()
            free()
            model64 = fp64_model_reference(model, tokens[:n], mask[:n])
            say(f"\nfp64 check on rows 0..{n - 1} ({int(mask[:n, 1:].sum()):,} targets): chunked bf16 {chunked:.8f}")
            say(f"  (a) bf16 hidden states, LM head + cross-entropy in fp64 over full logits: {head64:.8f}  "
                f"relative difference {abs(chunked - head64) / head64:.2e}")
            say(f"  (b) whole model in fp64:                                               {model64:.8f}  "
                f"relative difference {abs(chunked - model64) / model64:.2e}")
    write(args.out)


def write(out: str | None) -> None:
    """The report so far (written after each section, so that a run cut short keeps what it measured)."""
    if out:
        Path(out).write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
