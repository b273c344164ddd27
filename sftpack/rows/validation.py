"""The checks every reader of a rows file makes, whatever its format. ``hash``, ``verify``, ``inspect``, ``diff``,
``loss`` and the rollout read rows only through :class:`~sftpack.rows.reader.RowsReader`, whose ``checked_group``
and ``checked_provenance`` call these, so a file one of them refuses is refused by all of them with the same line.

    >>> import numpy as np
    >>> mask_problem(np.array([[0, 1], [1, 2]], np.uint8), first_row=64)
    'row 65: loss_mask holds values other than 0 and 1 (2)'
    >>> provenance_problem((["a"], [5], [4], [0]), row=3, row_tokens=8)
    'row 3: provenance piece 0 (conversation a) ends at 9, past the row (8 tokens)'
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def duplicated_columns(names) -> list[str]:
    """Column names the file holds more than once (a reader asking for one by name cannot know which it gets)."""
    return sorted(name for name, n in Counter(names).items() if n > 1)


def mask_problem(mask: np.ndarray, first_row: int) -> str | None:
    """Why a block of loss masks (rows ``first_row``..) is not sftpack's, or None: every value is 0 or 1."""
    bad = mask > 1
    if not bad.any():
        return None
    row = int(np.flatnonzero(bad.any(axis=1))[0])
    return f"row {first_row + row}: loss_mask holds values other than 0 and 1 ({int(mask[row][bad[row]][0])})"


def provenance_problem(values: tuple, row: int, row_tokens: int) -> str | None:
    """Why one row's provenance ``(ids, starts, lengths, offsets)`` does not fit the row, or None."""
    ids, starts, lengths, offsets = values
    if not len(ids) == len(starts) == len(lengths) == len(offsets):
        return (f"row {row}: provenance lists of different lengths ({len(ids)} ids, {len(starts)} starts, "
                f"{len(lengths)} lengths, {len(offsets)} offsets)")
    for piece, (name, start, length, offset) in enumerate(zip(ids, starts, lengths, offsets)):
        where = f"row {row}: provenance piece {piece} (conversation {name})"
        if None in (name, start, length, offset):
            return f"{where} has a null field"
        if start < 0 or length < 0 or offset < 0:
            return f"{where} has a negative start, length or offset ({start}, {length}, {offset})"
        if start + length > row_tokens:
            return f"{where} ends at {start + length}, past the row ({row_tokens} tokens)"
    return None
