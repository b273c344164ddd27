"""Pack encoded conversations into fixed-length rows (README "Packing and hash specification", item 5).

Conversations are concatenated with one EOS token (mask 0) between consecutive ones, the stream is cut into
consecutive ``row_tokens`` rows, position 0 of every row is unsupervised (the trainer predicts token t from
t-1), and rows left with no supervised token are dropped. Nothing is padded; the caller stops pulling rows, or
pulls them all (``--rows all``): the partial last row is then dropped and its size left in ``stats.tail_tokens``.

    >>> import numpy as np
    >>> convs = [("a", np.array([1, 2, 3]), np.array([0, 1, 1])), ("b", np.array([4, 5]), np.array([0, 1]))]
    >>> [(r.tokens.tolist(), r.loss_mask.tolist()) for r in pack(convs, row_tokens=3, eos_id=9)]
    [([1, 2, 3], [0, 1, 1]), ([9, 4, 5], [0, 0, 1])]
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np

from sftpack.builder.record import BuildStats
from sftpack.rows.formats import Piece, Row


def pack(
    conversations: Iterable[tuple[str, np.ndarray, np.ndarray]],
    row_tokens: int,
    eos_id: int,
    stats: BuildStats | None = None,
) -> Iterator[Row]:
    """Rows from ``(conversation_id, token_ids, loss_mask)`` in order. Lazy: a conversation is pulled only
    when the current row needs more tokens."""
    stats = stats if stats is not None else BuildStats()
    tokens = np.empty(row_tokens, dtype=np.int32)
    mask = np.empty(row_tokens, dtype=np.uint8)
    pieces: list[Piece] = []
    fill = 0
    first = True
    eos = (np.array([eos_id], dtype=np.int32), np.zeros(1, dtype=np.uint8))
    for conv_id, ids, conv_mask in conversations:
        stats.conversations += 1
        runs = [(None, *eos)] if not first else []
        first = False
        runs.append((conv_id, ids, conv_mask))
        for owner, run_ids, run_mask in runs:
            done = 0
            while done < len(run_ids):
                take = min(row_tokens - fill, len(run_ids) - done)
                tokens[fill : fill + take] = run_ids[done : done + take]
                mask[fill : fill + take] = run_mask[done : done + take]
                if owner is not None:
                    pieces.append(Piece(owner, fill, take, done))
                fill += take
                done += take
                if fill == row_tokens:
                    mask[0] = 0
                    if mask.any():
                        stats.rows_kept += 1
                        yield Row(tokens.copy(), mask.copy(), pieces)
                    else:
                        stats.rows_dropped_unsupervised += 1
                    pieces = []
                    fill = 0
    stats.tail_tokens = fill  # reached only when the conversations ran out (not when the caller stopped)


def pack_chunks(
    chunks: Iterable[tuple[list, np.ndarray, np.ndarray, np.ndarray]],
    row_tokens: int,
    eos_id: int,
    stats: BuildStats | None = None,
    pulled: Callable[[int | None], None] = lambda n: None,
) -> Iterator[Row]:
    """The rows of :func:`pack`, with the same counts, from chunks of conversations ``(ids, lengths, tokens,
    masks)`` (each chunk's kept conversations concatenated): each chunk is spliced with its EOS tokens and cut
    with array operations instead of conversation by conversation (the build's parent does this for every
    token, while its workers encode).

    ``pack`` pulls a conversation only when the row needs it; ``pulled(n)`` says how many conversations it
    would have pulled: before each row is handed out (the conversation that completes it, counting the EOS in
    front of a conversation as its own) and after each chunk; ``pulled(None)`` when the conversations ran out.

    >>> chunks = [(["a", "b"], np.array([3, 2]), np.array([1, 2, 3, 4, 5]), np.array([0, 1, 1, 0, 1]))]
    >>> [(r.tokens.tolist(), r.loss_mask.tolist()) for r in pack_chunks(chunks, row_tokens=3, eos_id=9)]
    [([1, 2, 3], [0, 1, 1]), ([9, 4, 5], [0, 0, 1])]
    """
    stats = stats if stats is not None else BuildStats()
    width = row_tokens
    carry_t, carry_m = np.zeros(0, np.int32), np.zeros(0, np.uint8)
    # conversations (partly) in the carry: ids, start in the carry, tokens there, offset of the first one
    open_ids: list = []
    open_s = open_l = open_o = np.zeros(0, np.int64)
    done = 0  # conversations pulled before this chunk
    for ids, lengths, tokens, masks in chunks:
        k = len(ids)
        if k == 0:
            continue
        lengths = np.asarray(lengths, dtype=np.int64)
        starts = np.zeros(k, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        eos_at = starts[1:] if done == 0 else starts  # an EOS before every conversation but the very first
        chunk_t = np.insert(np.asarray(tokens, np.int32), eos_at, eos_id)
        chunk_m = np.insert(np.asarray(masks, np.uint8), eos_at, 0)
        eos_before = np.arange(k) + (0 if done == 0 else 1)  # EOS tokens before each conversation's tokens
        base = len(carry_t)
        first_token = base + starts + eos_before  # in buf
        has_eos = np.ones(k, dtype=np.int64)
        if done == 0:
            has_eos[0] = 0
        owned_from = first_token - has_eos  # its EOS belongs to it: pack pulls the conversation to write it
        buf_t = np.concatenate([carry_t, chunk_t])
        buf_m = np.concatenate([carry_m, chunk_m])
        n_full = len(buf_t) // width
        all_ids = open_ids + list(ids)
        s = np.concatenate([open_s, first_token])
        ln = np.concatenate([open_l, lengths])
        off = np.concatenate([open_o, np.zeros(k, np.int64)])
        # pieces: one per (conversation, full row it reaches)
        r0 = s // width
        r1 = np.minimum((s + ln - 1) // width, n_full - 1)
        count = np.where((ln > 0) & (r0 < n_full), r1 - r0 + 1, 0)
        conv = np.repeat(np.arange(len(s)), count)
        row = r0[conv] + (np.arange(len(conv)) - np.repeat(np.cumsum(count) - count, count))
        lo = np.maximum(s[conv], row * width)
        hi = np.minimum(s[conv] + ln[conv], (row + 1) * width)
        bounds = np.searchsorted(row, np.arange(n_full + 1))  # pieces of row r: bounds[r]:bounds[r+1]
        p_ids = [all_ids[c] for c in conv.tolist()]
        p_start, p_len = (lo - row * width).tolist(), (hi - lo).tolist()
        p_off = (off[conv] + lo - s[conv]).tolist()
        owners = np.searchsorted(owned_from, (np.arange(n_full) + 1) * width - 1, side="right")  # 1-based in chunk
        for r in range(n_full):
            mask = buf_m[r * width : (r + 1) * width].copy()
            mask[0] = 0
            if not mask.any():
                stats.rows_dropped_unsupervised += 1
                continue
            a, b = bounds[r], bounds[r + 1]
            pieces = [Piece(p_ids[i], p_start[i], p_len[i], p_off[i]) for i in range(a, b)]
            stats.conversations = done + max(int(owners[r]), 1)
            pulled(stats.conversations)
            stats.rows_kept += 1
            yield Row(buf_t[r * width : (r + 1) * width].copy(), mask, pieces)
        # what is left is the partial row: carry it, with the conversations that reach into it
        cut = n_full * width
        carry_t, carry_m = buf_t[cut:].copy(), buf_m[cut:].copy()
        keep = s + ln > cut
        new_s = np.maximum(s[keep], cut)
        open_ids = [all_ids[c] for c in np.flatnonzero(keep).tolist()]
        open_o = off[keep] + new_s - s[keep]
        open_l = s[keep] + ln[keep] - new_s
        open_s = new_s - cut
        done += k
        stats.conversations = done
        pulled(done)
    stats.tail_tokens = len(carry_t)
    pulled(None)
