#!/usr/bin/env python
"""Regenerate the bundled sample ``sftpack/data/tulu3_sample.parquet``, deterministically.

The sample is synthetic (made by the ``tools/synthetic/`` package, not taken from the hub): 3,000 conversations in the
schema of ``allenai/tulu-3-sft-mixture``. Running this script again gives a byte-identical file (with the same
pyarrow version); ``tests/tools/test_synthetic.py`` checks that the bundled file equals a fresh regeneration.

    python scripts/make_sample.py            # rewrite the bundled file
    python scripts/make_sample.py --out x.parquet
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from synthetic import write_synthetic_parquet  # noqa: E402

N_CONVERSATIONS = 3000
SEED = 1
ROW_GROUP_SIZE = 1000
DEFAULT_OUT = REPO / "sftpack" / "data" / "tulu3_sample.parquet"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output path (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_synthetic_parquet(args.out, N_CONVERSATIONS, seed=SEED, row_group_size=ROW_GROUP_SIZE)
    data = args.out.read_bytes()
    print(f"{args.out}: {N_CONVERSATIONS} conversations, {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
