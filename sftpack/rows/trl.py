"""The TRL rows format: ``NAME.trl.parquet``, which ``datasets.load_dataset("parquet", ...)`` reads directly and
TRL's ``SFTTrainer`` trains on as pre-tokenized, pre-packed rows.

Per row: ``input_ids`` (the row's tokens), ``assistant_masks`` (the loss mask, one 0/1 per token: the column
TRL's dataset preparation turns into ``labels``, -100 where it is 0, whatever the trainer's options) and
``seq_lengths`` (the lengths of the row's documents: every conversation piece with the EOS after it; the
collator turns them into ``position_ids`` that restart at every conversation start, with ``padding_free=True``).
TRL's padding-free collator also sets the label of each document's first token to -100; sftpack never
supervises a conversation's first token (nor a row's), so the labels are the mask exactly.
"""

from __future__ import annotations

import numpy as np

from sftpack.rows.token_lists import BadBoundaries, TokenListLayout, TokenListRows, TokenListWriter


def _stored(boundaries: list[int]) -> list[int]:
    """A row's ``seq_lengths``: the lengths of its documents."""
    return [int(n) for n in np.diff(boundaries)]


def _encode(tokens: np.ndarray, mask: np.ndarray, boundaries: list[list[int]]):
    return mask, [_stored(b) for b in boundaries]


def _decode(tokens: np.ndarray, mask: np.ndarray, seq_lengths: list[list[int]]) -> np.ndarray:
    width = tokens.shape[1]
    for index, lengths in enumerate(seq_lengths):
        if not lengths or sum(lengths) != width or min(lengths) <= 0:
            raise BadBoundaries(index, f"{lengths[:8]} do not split the row's {width} tokens")
    return mask


LAYOUT = TokenListLayout("TRL", mask_column="assistant_masks", boundary_column="seq_lengths", encode=_encode,
                         decode=_decode, stored=_stored)


class TrlWriter(TokenListWriter):
    layout = LAYOUT


class TrlRows(TokenListRows):
    layout = LAYOUT
