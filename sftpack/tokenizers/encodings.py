"""tiktoken encodings built once per process: a vocabulary's ranks parsed and its ``tiktoken.Encoding`` made (0.5 s
for Qwen3.5's 248k ranks) the first time a build loads it, then taken from here, keyed by the sha256 of the file the
ranks come from and everything else that makes the encoding. Encodings are never changed once made."""

from __future__ import annotations

from typing import Callable

_ENCODINGS: dict[tuple, object] = {}


def encoding(source_sha256: str, name: str, pat_str: str, special_tokens: dict[str, int],
             ranks: Callable[[], dict[bytes, int]]):
    """The ``tiktoken.Encoding`` of the ranks ``ranks()`` reads from a file whose sha256 is ``source_sha256``; made
    here the first time in this process."""

    def make():
        import tiktoken

        return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=ranks(), special_tokens=special_tokens)

    return memo((source_sha256, name, pat_str, tuple(sorted(special_tokens.items()))), make)


def memo(key: tuple, make: Callable[[], object]):
    """``make()``'s encoding, made once per process for ``key`` (which names everything it is made from)."""
    made = _ENCODINGS.get(key)
    if made is None:
        made = _ENCODINGS[key] = make()
    return made


def forget() -> None:
    """Drop the encodings made in this process."""
    _ENCODINGS.clear()
