"""``sftpack diff``: where two rows files first differ, and why."""

from __future__ import annotations

import json

from sftpack.cli.color import use_color


def add(sub):
    p = sub.add_parser("diff", help="where two rows files first differ, and why", description=(
        "Compare two rows files row by row (streaming, a few row groups in memory): rows identical, the first "
        "differing row and position, tokens or loss mask only, the conversations there on both sides, both sides "
        "decoded around it, and the likely cause (tokenizer/template, loss-mask rule, order: seed, source revision "
        "or skipped rows, EOS, shift) with its evidence. Exit 0 identical, 1 different, 2 unusable input."))
    p.add_argument("a", metavar="A.parquet")
    p.add_argument("b", metavar="B.parquet")
    p.add_argument("--tokenizer", action="append", metavar="PATH", help="tokenizer that decodes the rows (default: the "
                   "model of each build record); once for both files, or twice: A's, then B's")
    p.add_argument("--model", help="model profile whose tokenizer decodes both files (default: each build record's)")
    p.add_argument("--no-decode", action="store_true", help="do not load a tokenizer or decode")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="ANSI colour (as inspect)")
    return p


def run(args) -> int:
    from sftpack.checks.diff import diff_rows, format_diff

    result = diff_rows(args.a, args.b, tokenizer=args.tokenizer, model=args.model, decode=not args.no_decode)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(format_diff(result, color=use_color(args)))
    return result["exit"]
