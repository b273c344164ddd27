"""The Kimi reference encoder for tests: ``TikTokenTokenizer.encode`` of ``tokenization_kimi.py`` reproduced
step for step (a per-character loop), the independent path that sftpack's regex cutting
(:func:`sftpack.tokenizers.tiktoken_vocab.long_input_pieces`) is compared with."""

from __future__ import annotations

import tiktoken

from sftpack.tokenizers.kimi import MAX_ENCODE_CHARS, MAX_RUN_CHARS


def _runs(text: str, limit: int):
    """Cut ``text`` so that no piece holds more than ``limit`` consecutive whitespace or non-whitespace chars."""
    start, run, run_is_space = 0, 0, text[:1].isspace()
    for i, char in enumerate(text):
        is_space = char.isspace()
        if is_space != run_is_space:
            run, run_is_space = 1, is_space
        else:
            run += 1
            if run > limit:
                yield text[start:i]
                start, run = i, 1
    yield text[start:]


def kimi_encode(encoding: tiktoken.Encoding, text: str, allow_special_tokens: bool = True) -> list[int]:
    """Token ids as ``TikTokenTokenizer.encode(text, allow_special_tokens)`` gives them (same chunking).

    ``allow_special_tokens=True`` (the hub default) reads any special token's text as that token;
    ``False`` encodes it as ordinary text.
    """
    ids: list[int] = []
    for chunk_start in range(0, len(text), MAX_ENCODE_CHARS):
        for piece in _runs(text[chunk_start:chunk_start + MAX_ENCODE_CHARS], MAX_RUN_CHARS):
            if allow_special_tokens:
                ids.extend(encoding.encode(piece, allowed_special="all"))
            else:
                ids.extend(encoding.encode(piece, disallowed_special=()))
    return ids
