"""The rows around the first difference of ``sftpack diff`` read as one stream per side: a context is a few
consecutive rows from the first differing row on, flattened into one token stream (rows are consecutive cuts of the
packed stream, so a shift shows across their boundaries), with the provenance pieces at their flat positions, the
tokens as text, the EOS the packer wrote, and the shift that makes one side equal the other.

    >>> import numpy as np
    >>> shift_at(np.array([1, 2, 9, 9, 3, 4, 5, 6]), np.array([1, 2, 3, 4, 5, 6, 7, 8]), 2, 4, window=3)
    (2, 4)
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

SHIFT_WINDOW = 32  # tokens that must agree after a shift before a shift is considered at all


def shift_at(x: np.ndarray, y: np.ndarray, p: int, max_shift: int, window: int = SHIFT_WINDOW):
    """Smallest k in 1..max_shift with ``x[p+k:] == y[p:]`` over ``window`` tokens, and for how many tokens
    the two then agree (at most to the end of either stream); None when there is none."""
    w = min(window, len(y) - p, len(x) - p - 1)
    if w < min(8, window):  # too few tokens left to tell a shift from chance
        return None
    seg = x[p + 1 : p + 1 + max_shift + w - 1]
    if len(seg) < w:
        return None
    hits = np.flatnonzero((sliding_window_view(seg, w) == y[p : p + w]).all(axis=1))
    if not len(hits):
        return None
    k = int(hits[0]) + 1
    n = min(len(x) - p - k, len(y) - p)
    bad = np.flatnonzero(x[p + k : p + k + n] != y[p : p + n])
    return k, int(bad[0]) if len(bad) else n


def stream_pieces(ctx: dict) -> list[dict]:
    """Provenance pieces of the context rows in stream order, with flat positions (row ``ctx.row`` starts at 0)."""
    out = []
    for k in sorted(ctx["provenance"]):
        base = (k - ctx["row"]) * ctx["width"]
        for p in ctx["provenance"][k].pieces():
            out.append({**p, "row": k, "end": p["start"] + p["length"], "flat": base + p["start"],
                        "flat_end": base + p["start"] + p["length"]})
    return out


def piece_at(pieces: list[dict], pos: int) -> tuple[int | None, bool]:
    """(index of the piece covering flat ``pos``, False), or (index of the piece before it, True) in a gap
    (a gap is an EOS the packer wrote)."""
    before = None
    for i, p in enumerate(pieces):
        if p["flat"] <= pos < p["flat_end"]:
            return i, False
        if p["flat_end"] <= pos:
            before = i
    return before, True


def conversations_in_order(pieces: list[dict]) -> list[str]:
    """Conversation ids in stream order (a conversation cut across rows counted once)."""
    seq = []
    for p in pieces:
        if not seq or p["offset"] == 0 or seq[-1] != p["conversation"]:
            seq.append(p["conversation"])
    return seq


def token_text(side, tok: int) -> str:
    try:  # a tokenizer that does not fit the rows (an id past its vocabulary) shows the id alone
        text = side.vocab.decode([int(tok)]) if side.vocab is not None else None
    except Exception:
        text = None
    return f"{int(tok)} {text!r}" if text is not None else str(int(tok))


def eos_id(side, contexts=()) -> int | None:
    """The EOS id of ``side``: its build record's, its tokenizer's, else the token the packer wrote between
    conversations where a context has provenance (either side: the packing rule is the same)."""
    if side.record.get("eos_token_id") is not None:
        return int(side.record["eos_token_id"])
    if side.vocab is not None:
        return int(side.vocab.eos_id)
    for ctx in contexts:
        pieces = stream_pieces(ctx)
        for before, after in zip(pieces, pieces[1:]):
            if before["flat_end"] < after["flat"] and 0 <= before["flat_end"] < len(ctx["tokens"]):
                return int(ctx["tokens"][before["flat_end"]])
    return None


def best_shift(tokens_a, tokens_b, q):
    """(who has extra tokens, k, tokens agreeing after the shift) or None: the smaller of the two directions."""
    max_shift = max(len(tokens_a), len(tokens_b)) - q
    found = []
    for extra, x, y in (("A", tokens_a, tokens_b), ("B", tokens_b, tokens_a)):
        hit = shift_at(x, y, q, max_shift)
        # a real shift agrees to the end of the rows read; a chance match of repeated text soon stops agreeing
        if hit is not None and hit[1] == min(len(x) - q - hit[0], len(y) - q):
            found.append((hit[0], extra, hit[1]))
    if not found:
        return None
    k, extra, agree = min(found)
    return extra, k, agree


def shift_text(shift, tokens_a, tokens_b, q, side_a, side_b) -> str:
    extra, k, agree = shift
    side, tokens = (side_a, tokens_a) if extra == "A" else (side_b, tokens_b)
    head = ", ".join(token_text(side, t) for t in tokens[q : q + min(k, 3)])
    return (f"from position {q} on, {'B' if extra == 'A' else 'A'} equals {extra} without the {k:,} "
            f"token(s) {extra} holds there ({head}{', …' if k > 3 else ''}); they then agree for {agree:,} tokens, "
            "to the end of the rows compared around it")
