"""``rows_sha256``: SHA-256 over rows in order, each row's token ids as little-endian int32, then its mask bytes;
the same whatever the rows format, so rows written in one format and converted to another keep their hash."""

from __future__ import annotations

import hashlib

import numpy as np

HASH_BLOCK_ROWS = 64  # rows interleaved per hash update


def update_rows_sha256(h, tokens: np.ndarray, mask: np.ndarray) -> None:
    """Feed rows to ``h`` as ``rows_sha256`` hashes them: each row's token ids as little-endian int32, then its
    mask bytes. A block of rows is interleaved once and hashed in one call: every return from a GIL-free call may
    wait for the GIL while another thread is busy (the writer hashes on its own thread while the build packs)."""
    tokens = np.ascontiguousarray(tokens, dtype="<i4")
    mask = np.ascontiguousarray(mask, dtype=np.uint8)
    for start in range(0, len(tokens), HASH_BLOCK_ROWS):
        block = slice(start, start + HASH_BLOCK_ROWS)
        h.update(np.concatenate([tokens[block].view(np.uint8), mask[block]], axis=1).data)


def rows_sha256_of(tokens: np.ndarray, loss_mask: np.ndarray) -> str:
    """SHA-256 over rows in order: each row's token ids as little-endian int32, then its mask bytes.

    >>> rows_sha256_of(np.array([[1, 2]], np.int32), np.array([[0, 1]], np.uint8)) == __import__("hashlib").sha256(
    ...     b"\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00\\x01").hexdigest()
    True
    """
    h = hashlib.sha256()
    update_rows_sha256(h, tokens, loss_mask)
    return h.hexdigest()
