"""``sftpack build``: the packed rows of a model profile, and the summary printed after them."""

from __future__ import annotations

import os
import signal
import sys

from sftpack.builder import interrupts
from sftpack.builder.config import add_arguments, from_arguments


def add(sub):
    p = sub.add_parser("build", help="build the packed rows of a model profile", description=(
        "Render, loss-mask and tokenize source conversations in a seeded global permutation, pack them into "
        "fixed-length rows and write OUT/NAME.parquet and OUT/NAME.build.yaml."))
    add_arguments(p)  # one declaration per option: sftpack.builder.config.BuildConfig
    return p


def run(args) -> int:
    from sftpack.builder.pipeline import build
    from sftpack.rows.formats import get_row_format

    config = from_arguments(args)
    record = build(config)
    print(summary(record, args.out, get_row_format(config.format).suffix))
    late = interrupts.late_signal()
    if late:
        print(f"sftpack: {signal.Signals(late).name} arrived after the outputs were in place: the build is complete",
              file=sys.stderr)
    return 0


def _path(record, which: str, out: str, suffix: str) -> str:
    """Where the build wrote a file (its record knows; one read back from YAML does not: OUT/NAME)."""
    paths = getattr(record, "paths", None)
    return str(getattr(paths, which)) if paths is not None else os.path.join(out, record.name + suffix)


def summary(record, out: str, suffix: str = ".parquet") -> str:
    """The one-screen summary printed after a build (of a :class:`~sftpack.builder.record.BuildRecord`)."""
    counts = record.counts
    skipped = counts.skipped
    roles = getattr(counts, "unknown_roles", None)  # the roles unknown_role skipped, by name
    lines = [
        f"built {record.rows} rows x {record.row_tokens} tokens  ({record.name}, loss mask {record.loss_mask})",
        f"  parquet       {_path(record, 'parquet', out, suffix)}  ({record.parquet_bytes:,} bytes)",
        f"  build record  {_path(record, 'record', out, '.build.yaml')}",
        f"  rows_sha256   {record.rows_sha256}",
        f"  parquet_sha256 {record.parquet_sha256}",
        f"  supervised    {counts.supervised_tokens:,} / {counts.total_tokens:,} tokens = {record.supervised_token_ratio:.4f}",
        f"  conversations {counts.conversations_packed:,} packed of {counts.source_rows_reached:,} reached "
        f"({record.dataset.source_rows:,} in the source); {sum(skipped.values()):,} skipped"
        + (": " + ", ".join(f"{k} {v}" for k, v in skipped.items()) if skipped else "")
        + (" (roles " + ", ".join(f"{role!r} {n}" for role, n in sorted(roles.items(), key=lambda kv: -kv[1])[:3])
           + ")" if roles else ""),
        f"  tokenizer     {record.tokenizer} ({record.tokenizer_source}); pins: "
        + (", ".join(f"{k} {v}" for k, v in record.pins.items()) or "none"),
        f"  renderer      {record.renderer}",
    ]
    if counts.tail_tokens_dropped is not None:
        lines.append(f"  --rows all    every full row until the source ended; {counts.tail_tokens_dropped:,} tokens "
                     "of the partial last row dropped")
    if counts.rows_dropped_without_targets:
        lines.append(f"  dropped       {counts.rows_dropped_without_targets} rows without supervised targets")
    return "\n".join(lines)
