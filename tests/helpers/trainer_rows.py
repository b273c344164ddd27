"""Small real rows for the trainer-format tests: the hand-made conversations of :mod:`helpers.rows_fixtures`, built
offline with the Qwen3.5 profile into short rows that each hold several conversations (and pieces of ones cut
across rows), in any rows format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import sftpack
from helpers.rows_fixtures import MODEL, conversations, offline
from sftpack.builder.config import BuildConfig

ROWS, ROW_TOKENS = 6, 256


def write_conversations(directory: Path) -> Path:
    path = Path(directory) / "convs.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations()), encoding="utf-8")
    return path


def build_rows(directory: Path, vocab, fmt: str = "parquet", rows: int = ROWS, row_tokens: int = ROW_TOKENS):
    """``(rows file, build record)`` of a build in ``directory`` in format ``fmt``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    source = write_conversations(directory)
    with offline():
        record = sftpack.build(BuildConfig(model=MODEL, source=str(source), rows=rows, row_tokens=row_tokens,
                                           out=str(directory / fmt), workers=1, progress=False, format=fmt),
                               vocab=vocab)
    return record.paths.parquet, record.paths.record


def documents(provenance) -> list[tuple[int, int]]:
    """A row's documents ``[(start, end)]``, derived here from the provenance columns alone: every conversation
    piece runs from its start to the next piece's start (the EOS after it included) or to the row's end."""
    starts = sorted({0, *provenance.starts})
    return list(zip(starts, starts[1:] + [provenance.row_tokens]))


def dense_ids(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, vocabulary)``: the tokens renumbered 0..V-1 in id order (``vocabulary[new] = old``), so that a
    tiny model's embedding covers them."""
    vocabulary, ids = np.unique(tokens, return_inverse=True)
    return ids.reshape(tokens.shape).astype(np.int32), vocabulary
