"""Random draws every generator uses. Small uniform draws use ``int(rng.random() * k)`` (faster than
``randrange``; plain IEEE arithmetic, so the same everywhere)."""

from __future__ import annotations

import array
import random
import sys

BIG_ENDIAN = sys.byteorder == "big"


def below(rng: random.Random, k: int) -> int:
    """A uniform integer in ``[0, k)``."""
    return int(rng.random() * k)


def between(rng: random.Random, a: int, b: int) -> int:
    """A uniform integer in ``[a, b]``."""
    return a + int(rng.random() * (b - a + 1))


def pick(rng: random.Random, seq):
    """A uniform element of ``seq``."""
    return seq[int(rng.random() * len(seq))]


def uint16s(rng: random.Random, k: int) -> array.array:
    """``k`` uniform 16-bit integers from one ``getrandbits`` call (table indices)."""
    a = array.array("H")
    a.frombytes(rng.getrandbits(16 * k).to_bytes(2 * k, "little"))
    if BIG_ENDIAN:
        a.byteswap()
    return a


class ConversationRng(random.Random):
    """``random.Random`` plus a buffer of pre-drawn plain words for phrases and titles."""

    def __init__(self, seed: str) -> None:
        super().__init__(seed)
        self.word_buffer: tuple[str, ...] = ()
        self.word_position = 0


def scaled(rng: random.Random, median: int) -> int:
    """A right-skewed length around ``median`` (ratio table, no transcendental functions)."""
    ratio = SKEW[below(rng, len(SKEW))]
    return max(1, int(median * ratio * (0.85 + 0.3 * rng.random())))


SKEW = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.3, 1.45, 1.6, 1.8, 2.1, 2.5, 3.2)
