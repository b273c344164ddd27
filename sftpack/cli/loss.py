"""``sftpack loss``: the step-0 loss of rows under a Hugging Face causal LM (needs torch)."""

from __future__ import annotations

import json


def add(sub):
    p = sub.add_parser("loss", help="step-0 loss of rows under a Hugging Face causal LM (needs torch)", description=(
        "Per-token mean cross-entropy over the supervised targets of the first --limit rows (target t predicted "
        "from position t-1), the LM head and softmax run in chunks of --chunk positions. Prints the loss, tokens/s, "
        "peak memory per GPU and, with --device-map, where each layer went. torch is the optional extra sftpack[loss]."))
    p.add_argument("--model", required=True, help="Hugging Face model id or local directory")
    p.add_argument("--revision", help="model revision (branch, tag or commit)")
    p.add_argument("--rows", required=True, metavar="ROWS.parquet", help="rows parquet written by sftpack build")
    p.add_argument("--limit", type=int, default=128, help="first rows to evaluate (default: 128)")
    p.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--device-map", choices=["auto"], help="auto: place the model across every visible GPU (and CPU, "
                   "offloaded) with accelerate; refused before any weight loads if it does not fit")
    p.add_argument("--max-memory", metavar="DEV=SIZE,...", help="with --device-map: weights allowed per device, "
                   "e.g. 0=60GiB,1=60GiB,cpu=200GiB (default: the free memory of each GPU and of the CPU)")
    p.add_argument("--compile", default="auto", choices=["auto", "yes", "no"], help="LM head + cross-entropy under "
                   "torch.compile: auto (default) when the head runs on CUDA; falls back to eager, saying why")
    p.add_argument("--dtype", default="bfloat16", help="bfloat16 (default), float16, float32 or float64")
    p.add_argument("--chunk", type=int, default=1024, help="positions per LM-head/cross-entropy chunk (default: 1024)")
    p.add_argument("--per-row", action="store_true", help="also report each row's loss")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model repository's own code")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no stage lines or bar on stderr")
    return p


def run(args) -> int:
    from sftpack.trainer.loss import format_result, loss_of_rows

    result = loss_of_rows(args.model, args.rows, revision=args.revision, limit=args.limit, device=args.device,
                          dtype=args.dtype, chunk=args.chunk, per_row=args.per_row, trust_remote_code=args.trust_remote_code,
                          device_map=args.device_map, max_memory=args.max_memory, compile=args.compile,
                          progress=args.progress)
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0
