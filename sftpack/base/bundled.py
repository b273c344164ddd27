"""Files shipped inside the package that code opens by path."""

from __future__ import annotations

from pathlib import Path

# The synthetic Tulu-schema sample (sftpack/data/README.md): `--source sample`, and the proof's battery.
SAMPLE_PATH = Path(__file__).resolve().parents[1] / "data" / "tulu3_sample.parquet"
