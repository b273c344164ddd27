"""Helpers the tests share (no test module imports another test module): reference implementations, small
tokenizers, fixtures' builders, the trainer double. ``REPO`` is the repository root; ``SHARED`` is ../shared beside it."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
