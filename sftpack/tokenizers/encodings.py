"""tiktoken encodings built once per process: a vocabulary's ranks read and its ``tiktoken.Encoding`` made (0.4 s
for Qwen3.5's 248k ranks, half of it the encoding's core, made when first used) the first time a build loads it, then
taken from here, keyed by the sha256 of the file the ranks come from and everything else that makes the encoding.
Encodings are never changed once made."""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from sftpack.tokenizers.engine_internals import deferred_encoding, mergeable_ranks, special_tokens

_ENCODINGS: dict[tuple, object] = {}


def encoding(source_sha256: str, name: str, pat_str: str, special_tokens: dict[str, int],
             ranks: Callable[[], dict[bytes, int]]):
    """The ``tiktoken.Encoding`` of the ranks ``ranks()`` reads from a file whose sha256 is ``source_sha256``; made
    here the first time in this process."""

    def make():  # its core made when first used (a build: beside the huge-page collapse, see use_backend)
        return deferred_encoding(name, pat_str, ranks(), special_tokens)

    return memo((source_sha256, name, pat_str, tuple(sorted(special_tokens.items()))), make)


def memo(key: tuple, make: Callable[[], object]):
    """``make()``'s encoding, made once per process for ``key`` (which names everything it is made from)."""
    made = _ENCODINGS.get(key)
    if made is None:
        made = _ENCODINGS[key] = make()
    return made


_LENGTHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # encoding -> its tokens' byte lengths


def byte_lengths(encoding) -> np.ndarray:
    """Each token id's length in bytes (read-only; once per encoding and process: 0.05 s for Qwen3.5's 248k ranks)."""
    lens = _LENGTHS.get(encoding)
    if lens is None:
        lens = np.zeros(encoding.max_token_value + 1, dtype=np.int32)  # summed in int64 or int32 by the mask
        ranks = mergeable_ranks(encoding)  # with numpy, not a loop over 248k ranks
        count = len(ranks)
        lens[np.fromiter(ranks.values(), np.int64, count)] = np.fromiter(map(len, ranks), np.int32, count)
        for token, rank in special_tokens(encoding).items():
            lens[rank] = len(token.encode("utf-8"))
        lens.flags.writeable = False
        _LENGTHS[encoding] = lens
    return lens


def forget() -> None:
    """Drop the encodings made in this process."""
    _ENCODINGS.clear()
