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

from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from .record import BuildStats


@dataclass
class Piece:
    """A run of one conversation's tokens inside a row: ``tokens[start:start+length]`` of the row are the
    conversation's tokens ``[offset, offset+length)``."""

    conversation: str
    start: int
    length: int
    offset: int


@dataclass
class Row:
    tokens: np.ndarray  # int32, row_tokens
    loss_mask: np.ndarray  # uint8 0/1, row_tokens
    pieces: list[Piece] = field(default_factory=list)

    @property
    def supervised(self) -> int:
        return int(self.loss_mask.sum())


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
