"""GPU evidence for ``sftpack loss``: chunked LM head vs the naive full-logits computation, and an fp64 check.

On rows built by ``sftpack build`` and a random-initialised model of realistic shape (Qwen3 architecture, the
real Qwen3.5 vocabulary of 248,077 tokens, hidden 2,048, a few layers, bf16), this

1. runs the real command, ``python -m sftpack loss --model DIR --rows ROWS --limit N --device cuda --json``,
   and reports its loss, tokens/s and peak GPU memory;
2. runs the naive computation - Hugging Face's own ``model(input_ids, labels=labels)`` (full bf16 logits, upcast
   to fp32 inside its loss) - at batch sizes 1, 4, 8, ... until it runs out of memory, reporting tokens/s and
   peak memory, and its loss over the same rows;
3. on a slice of rows, checks the chunked loss against fp64 references: (a) the same bf16 hidden states with the
   LM head and cross-entropy in fp64 over full logits (isolates the chunked head), (b) the whole model in fp64.

    python benchmarks/loss_gpu.py --rows ROWS.parquet [--limit 128] [--out benchmarks/results/loss_gpu_h200.txt]

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

    from sftpack.loss import decoder_of, hidden_states

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
    ap.add_argument("--device", default="cuda", help="cuda (default); cpu only to try the script with a small model")
    ap.add_argument("--out", help="also write the report here")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device

    import torch
    import transformers
    from transformers.utils import logging as hf_logging

    from sftpack.loss import step0_loss

    hf_logging.disable_progress_bar()
    from sftpack.rows import read_rows, rows_sha256_of

    gpu = torch.cuda.get_device_name() if _cuda() else "cpu"
    say(f"sftpack loss on {gpu}; torch {torch.__version__}, transformers {transformers.__version__}")
    tokens, mask = read_rows(args.rows, slice(0, args.limit))
    say(f"rows: {args.rows}, first {len(tokens)} rows x {tokens.shape[1]:,} tokens, "
        f"{int(mask[:, 1:].sum()):,} supervised targets, rows_sha256 {rows_sha256_of(tokens, mask)}")
    with tempfile.TemporaryDirectory(prefix="sftpack-loss-gpu-") as tmp:
        model_dir = Path(tmp) / "model"
        make_model(model_dir, args)

        # 1. The real command.
        command = [sys.executable, "-m", "sftpack", "loss", "--model", str(model_dir), "--rows", args.rows,
                   "--limit", str(args.limit), "--device", DEVICE, "--dtype", "bfloat16", "--chunk", "1024", "--json"]
        say(f"\n$ sftpack loss --model <random Qwen3 model> --rows ROWS --limit {args.limit} --device {DEVICE} --dtype bfloat16 --json")
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
        if run.returncode != 0:
            say(run.stderr)
            raise SystemExit(f"sftpack loss failed with exit code {run.returncode}")
        cli = json.loads(run.stdout)
        cli_peak = cli["peak_gpu_memory_bytes"]
        say(f"chunked (sftpack loss): loss {cli['loss']:.6f}, {cli['tokens_per_second']:,.0f} tokens/s "
            f"({cli['seconds']:.2f} s for {cli['rows']} rows), peak GPU memory {peak_gib(cli_peak)} GiB, "
            f"head self-check {cli['head_check']:.2g}")

        # 2. The naive computation, in this process.
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to(DEVICE).eval()
        weights = torch.cuda.memory_allocated() if _cuda() else None
        say(f"\nmodel weights on the GPU: {peak_gib(weights)} GiB")
        say(f"{'computation':<42} {'rows':>5} {'tokens/s':>10} {'peak GiB':>9} {'loss':>10}")
        say(f"{'chunked, sftpack loss (batch 1, chunk 1024)':<42} {cli['rows']:>5} {cli['tokens_per_second']:>10,.0f} "
            f"{peak_gib(cli_peak):>9} {cli['loss']:>10.6f}")
        naive = {}
        for batch in [int(b) for b in args.naive_batches.split(",")]:
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
            say(f"same {len(tokens)} rows: chunked {cli['loss']:.6f} vs naive {naive[1]['loss']:.6f} "
                f"(difference {cli['loss'] - naive[1]['loss']:+.2e})")
            if _cuda():
                say(f"memory above the weights: chunked {(cli_peak - weights) / 2**30:.2f} GiB vs naive batch 1 "
                    f"{(naive[1]['peak'] - weights) / 2**30:.2f} GiB; speed chunked / naive batch 1: "
                    f"{cli['tokens_per_second'] / naive[1]['tokens_per_second']:.2f}x")

        # 3. fp64 references on a slice.
        n = min(args.check_rows, len(tokens))
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
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
