"""``sftpack hash``: recompute ``rows_sha256`` (and the other row figures) of a rows file."""

from __future__ import annotations

import json


def add(sub):
    p = sub.add_parser("hash", help="recompute rows_sha256 of a rows parquet", description=(
        "SHA-256 over the rows in order, each row = its tokens as little-endian int32 then its loss mask as one byte per token."))
    p.add_argument("rows", help="rows parquet written by sftpack build")
    p.add_argument("--json", action="store_true", help="all recomputed figures as JSON")
    return p


def run(args) -> int:
    from sftpack.base.hashing import file_sha256
    from sftpack.rows import hash_rows

    figures = hash_rows(args.rows)
    if args.json:
        figures["parquet_sha256"], figures["parquet_bytes"] = file_sha256(args.rows)
        print(json.dumps(figures, indent=2))
    else:
        print(f"{figures['rows_sha256']}  {args.rows}")
        if figures.get("boundaries"):  # a trainer's layout: what it reads as documents was checked too
            print(f"  {figures['boundaries']}")
    return 0
