"""Pack encoded conversations into fixed-length rows (docs/spec.md, "Packing", item 5).

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

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from sftpack.builder.record import BuildStats
from sftpack.rows.model import Piece, Pieces, Row


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
    masks)`` (each chunk's kept conversations concatenated, each preceded by one EOS token, mask 0; the stream's
    very first EOS is dropped): each chunk is cut with array operations instead of conversation by conversation
    (the build's parent does this for every token, while its workers encode).

    ``pack`` pulls a conversation only when the row needs it; ``pulled(n)`` says how many conversations it
    would have pulled: before each row is handed out (the conversation that completes it, counting the EOS in
    front of a conversation as its own) and after each chunk; ``pulled(None)`` when the conversations ran out.

    >>> chunks = [(["a", "b"], np.array([3, 2]), np.array([9, 1, 2, 3, 9, 4, 5]), np.array([0, 0, 1, 1, 0, 0, 1]))]
    >>> [(r.tokens.tolist(), r.loss_mask.tolist()) for r in pack_chunks(chunks, row_tokens=3, eos_id=9)]
    [([1, 2, 3], [0, 1, 1]), ([9, 4, 5], [0, 0, 1])]
    """
    stats = stats if stats is not None else BuildStats()
    width = row_tokens
    carry = _Stream.empty()  # the partial row left by the chunks so far
    done = 0  # conversations pulled before this chunk
    for ids, lengths, tokens, masks in chunks:
        if len(ids) == 0:
            continue
        stream = carry.extended(ids, lengths, tokens, masks, first_chunk=done == 0)
        full_rows = len(stream.tokens) // width
        pieces = stream.row_pieces(width, full_rows)
        # the chunk's conversations (1-based) that complete each row: pack would pull them to write it
        owners = np.searchsorted(stream.owned_from, (np.arange(full_rows) + 1) * width - 1, side="right")
        # rows are views of this chunk's stream (fresh arrays, never written again; its rest is copied out)
        token_rows = stream.tokens[: full_rows * width].reshape(full_rows, width)
        mask_rows = stream.mask[: full_rows * width].reshape(full_rows, width)
        mask_rows[:, 0] = 0  # position 0 of a row is never a target
        # masks are 0/1: an int32 sum, where np.count_nonzero(axis=1) first makes a bool copy (14% off the packing)
        supervised = mask_rows.sum(axis=1, dtype=np.int32).tolist()
        for r in range(full_rows):
            if not supervised[r]:
                stats.rows_dropped_unsupervised += 1
                continue
            stats.conversations = done + max(int(owners[r]), 1)
            pulled(stats.conversations)
            stats.rows_kept += 1
            row = Row(token_rows[r], mask_rows[r], pieces[r])
            row.__dict__["supervised"] = supervised[r]  # Row.supervised (a cached property), counted for the chunk at once
            yield row
        carry = stream.rest(full_rows * width)
        done += len(ids)
        stats.conversations = done
        pulled(done)
    stats.tail_tokens = len(carry.tokens)
    pulled(None)


@dataclass
class _Stream:
    """Tokens on their way into rows, and the conversations they hold: conversation ``i`` is ``ids[i]``, its
    ``lengths[i]`` tokens from ``starts[i]`` in the stream, the first of them its token ``offsets[i]`` (> 0: it began
    in an earlier row). ``owned_from``: where each conversation of the latest chunk begins, its EOS included."""

    tokens: np.ndarray
    mask: np.ndarray
    ids: list
    starts: np.ndarray
    lengths: np.ndarray
    offsets: np.ndarray
    owned_from: np.ndarray

    @classmethod
    def empty(cls) -> "_Stream":
        nothing = np.zeros(0, np.int64)
        return cls(np.zeros(0, np.int32), np.zeros(0, np.uint8), [], nothing, nothing, nothing, nothing)

    def extended(self, ids: list, lengths, tokens, masks, first_chunk: bool) -> "_Stream":
        """This stream followed by a chunk's conversations (each preceded by its EOS, the very first one's dropped)."""
        count = len(ids)
        lengths = np.asarray(lengths, dtype=np.int64)
        skip = 1 if first_chunk else 0
        # where each conversation's first token lands: its EOS and those of the ones before it come first
        first_token = np.cumsum(lengths + 1) - lengths + (len(self.tokens) - skip)
        has_eos = np.ones(count, dtype=np.int64)
        if first_chunk:
            has_eos[0] = 0
        return _Stream(np.concatenate([self.tokens, tokens[skip:]]), np.concatenate([self.mask, masks[skip:]]),
                       self.ids + list(ids), np.concatenate([self.starts, first_token]),
                       np.concatenate([self.lengths, lengths]), np.concatenate([self.offsets, np.zeros(count, np.int64)]),
                       first_token - has_eos)  # its EOS belongs to it: pack pulls the conversation to write it

    def row_pieces(self, width: int, full_rows: int) -> list[Pieces]:
        """The conversation pieces of each of the first ``full_rows`` rows: one per (conversation, row it reaches)."""
        starts, lengths = self.starts, self.lengths
        first_row = starts // width
        last_row = np.minimum((starts + lengths - 1) // width, full_rows - 1)
        count = np.where((lengths > 0) & (first_row < full_rows), last_row - first_row + 1, 0)
        conversation = np.repeat(np.arange(len(starts)), count)
        row = first_row[conversation] + (np.arange(len(conversation)) - np.repeat(np.cumsum(count) - count, count))
        low = np.maximum(starts[conversation], row * width)
        high = np.minimum(starts[conversation] + lengths[conversation], (row + 1) * width)
        bounds = np.searchsorted(row, np.arange(full_rows + 1)).tolist()  # pieces of row r: bounds[r]:bounds[r+1]
        piece_ids = [self.ids[c] for c in conversation.tolist()]
        piece_starts, piece_lengths = low - row * width, high - low
        piece_offsets = self.offsets[conversation] + low - starts[conversation]
        return [Pieces(piece_ids[a:b], piece_starts[a:b], piece_lengths[a:b], piece_offsets[a:b])
                for a, b in zip(bounds, bounds[1:])]

    def rest(self, cut: int) -> "_Stream":
        """The stream from ``cut`` on (the partial row), with the conversations that reach into it."""
        keep = self.starts + self.lengths > cut
        new_starts = np.maximum(self.starts[keep], cut)
        ids = [self.ids[c] for c in np.flatnonzero(keep).tolist()]
        return _Stream(self.tokens[cut:].copy(), self.mask[cut:].copy(), ids, new_starts - cut, self.starts[keep] + self.lengths[keep] - new_starts,
                       self.offsets[keep] + new_starts - self.starts[keep], np.zeros(0, np.int64))
