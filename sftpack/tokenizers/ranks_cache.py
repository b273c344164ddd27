"""A tiktoken rank file's ranks kept in binary in sftpack's cache (:func:`sftpack.base.cache.cache_dir`) under
``ranks/<sha256 of the file's bytes>-<format>``: read back in 0.1 s where parsing Qwen3.5's 248k base64 lines takes
0.2 s, and with them quicktok's ranks file and its sha256, which name the engine's tables
(:mod:`sftpack.tokenizers.quicktok_tables`), not made again (0.07 s).

An entry holds quicktok's ranks file (:func:`~sftpack.tokenizers.quicktok_vocab.vocab_bytes` of the parsed ranks),
each token's length (u16, in its order: where each record starts) and ``SHA256SUMS``. It is written into a directory
of its own beside the cache's and renamed into place, and checked every time it is read: the sums, and each record's
length where the lengths put it. A missing or damaged entry is written again from the file; where the cache cannot be
written, the file is parsed as without it."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from sftpack.base.cache import cache_dir, publish, staging_dir
from sftpack.tokenizers.quicktok_vocab import vocab_bytes

FORMAT = 1  # the layout of an entry; a new one never reads an old one
VOCAB, LENGTHS, SUMS = "ranks.vocab", "lengths.u16", "SHA256SUMS"
# id(ranks) -> (those ranks, quicktok's ranks file of them, its sha256), for the ranks read or written here
_KNOWN: dict[int, tuple[dict, bytes, str]] = {}


def cached_ranks(data: bytes, sha256: str, parse: Callable[[bytes], dict[bytes, int]]) -> dict[bytes, int]:
    """The ranks of the rank file whose bytes are ``data`` and sha256 ``sha256``: from its cache entry, else
    ``parse(data)``, then kept there."""
    entry = cache_dir() / "ranks" / f"{sha256}-{FORMAT}"
    state, got = _read(entry)
    if got is None:
        ranks = parse(data)
        vocab = vocab_bytes(ranks)
        got = ranks, vocab, hashlib.sha256(vocab).hexdigest()
        _write(entry, vocab, np.fromiter(map(len, ranks), np.uint16, len(ranks)).tobytes(), state == "damaged")
    _KNOWN[id(got[0])] = got
    return got[0]


def known_vocab(ranks: dict[bytes, int]) -> tuple[bytes, str] | None:
    """quicktok's ranks file of ``ranks`` and its sha256, where these ranks came through :func:`cached_ranks`."""
    known = _KNOWN.get(id(ranks))
    return known[1:] if known is not None and known[0] is ranks else None


def _read(entry: Path) -> tuple[str, tuple | None]:
    """``("ok", (ranks, vocab, its sha256))``, or ``("missing" | "damaged", None)``."""
    if not entry.is_dir():
        return "missing", None
    try:
        sums = dict(line.split("  ", 1)[::-1] for line in (entry / SUMS).read_text().splitlines())
        vocab, lengths = (entry / VOCAB).read_bytes(), (entry / LENGTHS).read_bytes()
        digest = hashlib.sha256(vocab).hexdigest()
        if set(os.listdir(entry)) != {VOCAB, LENGTHS, SUMS} or sums != {
                VOCAB: digest, LENGTHS: hashlib.sha256(lengths).hexdigest()}:
            return "damaged", None
        ranks = _decode(vocab, lengths)
    except (OSError, ValueError, UnicodeDecodeError):
        return "damaged", None
    return ("ok", (ranks, vocab, digest)) if ranks is not None else ("damaged", None)


def _decode(vocab: bytes, lengths: bytes) -> dict[bytes, int] | None:
    """The ranks of quicktok's ranks file ``vocab`` whose tokens' lengths are ``lengths``; None where they disagree."""
    size = np.frombuffer(lengths, np.uint16).astype(np.int64)
    n = len(size)
    if n == 0 or len(vocab) != 4 + int((size + 6).sum()) or int.from_bytes(vocab[:4], "little") != n:
        return None
    start = np.full(n, 4, np.int64)
    np.cumsum(size[:-1] + 6, out=start[1:])
    start[1:] += 4
    data = np.frombuffer(vocab, np.uint8)
    if not np.array_equal(data[start].astype(np.int64) | data[start + 1].astype(np.int64) << 8, size):
        return None
    first, end = start + 2, start + 2 + size
    rank = data[end[:, None] + np.arange(4)].copy().view("<u4").ravel()
    return dict(zip([vocab[a:b] for a, b in zip(first.tolist(), end.tolist())], rank.tolist()))


def _write(entry: Path, vocab: bytes, lengths: bytes, damaged: bool) -> None:
    try:
        staging = staging_dir(entry)
    except OSError:  # a cache that cannot be written: the file is parsed each time, as without it
        return
    try:
        Path(staging, VOCAB).write_bytes(vocab)
        Path(staging, LENGTHS).write_bytes(lengths)
        Path(staging, SUMS).write_text("".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n"
                                               for name, data in ((LENGTHS, lengths), (VOCAB, vocab))))
        publish(staging, entry, replace=damaged)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
