"""The Megatron-Bridge rows format: ``NAME.idx.parquet``, the packed-parquet file Megatron-Bridge's
``GPTSFTPackedParquetDataset`` reads (``packed_train_data_path``; its name ends in ``.idx.parquet`` as that
dataset's own files do).

Per row: ``input_ids`` (the row's tokens), ``seq_start_id`` (where each document starts: every conversation
piece, the EOS after a conversation staying with it) and ``loss_mask`` in Megatron-Bridge's convention: entry
``i`` says whether the token at ``i + 1`` is a target (its packer rolls each sequence's mask left by one), so
that its collate, which feeds each document's tokens but the last and predicts the next one, reads
``loss_mask[start:end - 1]``. A document's first token is never a target there; sftpack never supervises a
conversation's first token (nor a row's), so nothing is lost, and rows where one is supervised are refused.
"""

from __future__ import annotations

import numpy as np

from sftpack.rows.token_lists import BadBoundaries, TokenListLayout, TokenListRows, TokenListWriter


def _stored(boundaries: list[int]) -> list[int]:
    """A row's ``seq_start_id``: where each of its documents starts."""
    return list(boundaries[:-1])


def _encode(tokens: np.ndarray, mask: np.ndarray, boundaries: list[list[int]]):
    for index, starts in enumerate(boundaries):
        supervised = [start for start in starts[:-1] if mask[index, start]]
        if supervised:
            raise BadBoundaries(index, f"the token at {supervised[0]} starts a document and is a target")
    stored = np.zeros_like(mask)
    stored[:, :-1] = mask[:, 1:]
    return stored, [_stored(b) for b in boundaries]


def _decode(tokens: np.ndarray, stored: np.ndarray, seq_start_ids: list[list[int]]) -> np.ndarray:
    width = tokens.shape[1]
    mask = np.zeros_like(stored)
    mask[:, 1:] = stored[:, :-1]
    for index, starts in enumerate(seq_start_ids):
        if not starts or starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:])) or starts[-1] >= width:
            raise BadBoundaries(index, f"{starts[:8]} are not document starts in {width} tokens")
        mask[index, starts] = 0  # the entry before a document start is never read: no target there
    return mask


LAYOUT = TokenListLayout("Megatron-Bridge", mask_column="loss_mask", boundary_column="seq_start_id",
                         encode=_encode,
                         decode=_decode, stored=_stored)


class MegatronBridgeWriter(TokenListWriter):
    layout = LAYOUT


class MegatronBridgeRows(TokenListRows):
    layout = LAYOUT
