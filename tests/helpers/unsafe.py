"""The whole table of code points that send a text to tiktoken, every plane filled at once (what a build's
:class:`~sftpack.tokenizers.code_points.UnsafeTable` fills a plane at a time)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from sftpack.tokenizers.code_points import UnsafeTable


@lru_cache(maxsize=2)
def unsafe_table(marks: bool) -> np.ndarray:
    table = UnsafeTable(marks)
    table.fill(range(17))
    return table.table
