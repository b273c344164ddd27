"""Which code points send a text to tiktoken rather than quicktok (:mod:`sftpack.tokenizers.backend`): a table per
code point, from this Python's Unicode database.

    >>> table = UnsafeTable(marks=True)
    >>> table[np.array([ord("a"), 0x301, 0x378])].tolist()  # a letter, a combining mark, an unassigned code point
    [False, True, True]
"""

from __future__ import annotations

import unicodedata

import numpy as np


class UnsafeTable:
    """Per code point, True where a text holding it goes to tiktoken: unassigned in this Python's Unicode database
    (``Cn``; the engines' Unicode versions differ there), a surrogate (``Cs``) and, with ``marks``, a combining mark
    (``Mn``, ``Mc``, ``Me``). Each plane (65,536 code points) is computed the first time one of its code points is
    looked up: a build meets few planes beyond the first (0.012 s, against 0.073 s for the whole table)."""

    def __init__(self, marks: bool):
        self.categories = {"Cn", "Cs"} | ({"Mn", "Mc", "Me"} if marks else set())
        self.table = np.ones(0x110000, dtype=bool)
        self.filled = np.zeros(17, dtype=bool)
        self.fill([0])

    def fill(self, planes) -> None:
        category, unsafe = unicodedata.category, self.categories
        for plane in planes:
            if not self.filled[plane] and not 4 <= plane <= 13:  # planes 4-13 stay unsafe: unassigned in every Unicode
                first = plane << 16
                self.table[first:first + 0x10000] = [category(chr(c)) in unsafe for c in range(first, first + 0x10000)]
            self.filled[plane] = True

    def __getitem__(self, points: np.ndarray) -> np.ndarray:
        """Per code point in ``points`` (an integer array), whether it is unsafe."""
        if len(points) and points.max() > 0xFFFF:
            planes = np.unique(points[points > 0xFFFF] >> 16)
            if not self.filled[planes].all():
                self.fill(planes.tolist())
        return self.table[points]
