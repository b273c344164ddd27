"""What writing the rows costs a build: the build's loop (encode, pack, write; no start-up) over the synthetic
Tulu-size source, in turns with the parquet writer and with a writer that drops the rows, in this process.

    python benchmarks/writer_share.py --workers 16 --pairs 3
    python benchmarks/writer_share.py --workers 2 --conversations 200000 --pairs 2

Prints each loop's wall seconds, the CPU seconds of this process (packing and, unless ``SFTPACK_WRITER_PROCESS``
puts it elsewhere, the writer) and of everything (the workers and the writer process it reaps), and the rows_sha256
(the dropping writer has none). The source is ``build_bench.py``'s (cached under ``benchmarks/.cache/``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent


class DroppedRows:
    """A rows writer that keeps nothing."""

    rows_sha256 = "-"
    timings: dict = {}

    def write(self, row) -> None:
        pass

    def close(self) -> tuple[str, int]:
        return ("", 0)

    def abort(self) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="Qwen3.5-122B-A10B")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--conversations", type=int, default=939_000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--cache", default=str(HERE / ".cache"))
    args = ap.parse_args()
    for extra in (HERE, HERE.parent, HERE.parent / "tests", HERE.parent / "tools"):
        sys.path.insert(0, str(extra))
    import build_bench
    from sftpack.builder import pipeline
    from sftpack.builder.progress import Clock
    from sftpack.builder.config import ALL
    from sftpack.families.encode import make_encoder
    from sftpack.builder.record import BuildStats
    from sftpack.sources import open_source
    from sftpack.builder.writer_process import WriterProcess
    from sftpack.families.profiles import load_profile
    from sftpack.rows.formats import new_row_writer
    from sftpack.rows.writer import RowSink
    from sftpack.tokenizers.loading import load_vocab

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    source_path = build_bench.source_file(args.conversations, 1, cache, os.cpu_count() or 1)
    build_bench.MODEL = args.model
    build_bench._offline_o200k(cache)
    profile = load_profile(args.model)
    vocab = load_vocab(profile, None, allow_unpinned=False)
    vocab.use_backend("auto")
    encoder = make_encoder(profile, vocab)
    source = open_source(str(source_path), revision=None, sharegpt=False)
    order = pipeline.permutation(len(source), 42)
    out = Path(tempfile.mkdtemp(prefix="sftpack-writer-share-")) / "rows.parquet"
    config = types.SimpleNamespace(progress=False, strict=False)
    for _ in range(args.pairs):
        for kind in ("parquet", "dropped"):
            if kind == "parquet":
                writer = WriterProcess(lambda: new_row_writer("parquet", out, 8192, "bench"), 8192)
            else:
                writer = RowSink(DroppedRows())
            before, t = os.times(), time.perf_counter()
            pipeline._write_rows(encoder, source, order, writer, BuildStats(), ALL, 8192, args.workers, config,
                                 Clock())
            writer.close()
            wall, after = time.perf_counter() - t, os.times()
            own = (after.user - before.user) + (after.system - before.system)
            reaped = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            print(f"{args.model:20s} workers {args.workers:2d} writer {kind:8s} loop wall {wall:6.2f} s  "
                  f"cpu this process {own:6.1f} s  all {own + reaped:6.1f} s  rows {writer.rows:,}  "
                  f"rows_sha256 {writer.rows_sha256[:12]}", flush=True)
    out.unlink(missing_ok=True)
    out.parent.rmdir()


if __name__ == "__main__":
    main()
