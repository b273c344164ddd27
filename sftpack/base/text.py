"""The one check for text that is not valid Unicode: a lone surrogate (JSON can escape one; UTF-8, Arrow and the
tokenizers cannot hold it)."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text``, or None.

    >>> lone_surrogate("ok"), lone_surrogate("a" + chr(0xD800) + "b")
    (None, 1)
    """
    found = _SURROGATE.search(text)
    return None if found is None else found.start()
