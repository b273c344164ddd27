"""``sftpack inspect``: a rows file's summary, or one row decoded with its supervised spans."""

from __future__ import annotations

import json

from sftpack.cli.color import use_color


def add(sub):
    p = sub.add_parser("inspect", help="summary of a rows parquet, or one row decoded", description=(
        "Without --row: rows, tokens, supervised ratio, conversations and a histogram of supervised tokens per row. "
        "With --row K: the row decoded, supervised spans highlighted, conversation boundaries marked with source ids."))
    p.add_argument("rows", metavar="ROWS.parquet", help="rows parquet written by sftpack build")
    p.add_argument("--row", type=int, metavar="K", help="show row K (0-based)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--model", help="model profile whose tokenizer decodes the row (default: the build record's)")
    p.add_argument("--tokenizer", help="local tokenizer directory or tokenizer.json")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="ANSI colour for supervised spans (auto: when stdout is a terminal; else markers)")
    return p


def run(args) -> int:
    from sftpack.checks import inspect as inspection

    if args.row is None:
        info = inspection.summarize(args.rows)
        print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else inspection.format_summary(info))
        return 0
    view = inspection.row_view(args.rows, args.row, inspection.resolve_vocab(args.rows, args.model, args.tokenizer,
                                                                            required=not args.json))
    if args.json:
        print(json.dumps(view, ensure_ascii=False))
    else:
        print(inspection.format_row(view, color=use_color(args)))
    return 0
