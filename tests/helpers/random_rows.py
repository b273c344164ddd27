"""Packed rows of random tokens and masks, for the rows writers' tests: each row holds two conversations, some
with a non-ASCII id."""

from __future__ import annotations

import numpy as np

from sftpack.rows.model import Piece, Row

WIDTH = 96


def make_rows(n: int, seed: int = 3) -> list[Row]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        tokens = rng.integers(0, 250_000, WIDTH, dtype=np.int32)
        mask = (rng.random(WIDTH) < 0.6).astype(np.uint8)
        mask[0] = 0
        cut = int(rng.integers(1, WIDTH))
        rows.append(Row(tokens, mask, [Piece(f"c{k}" if k % 3 else f"c{k}-東京é", 0, cut, 5), Piece(f"c{k + 1}", cut, WIDTH - cut, 0)]))
    return rows
