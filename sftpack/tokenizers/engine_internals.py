"""The one module that reads what tiktoken and quicktok keep private: a tiktoken ``Encoding``'s ranks, special
tokens and pre-tokenizer regex (no public accessor returns them), and quicktok's writer of an encoding's files and
builder of its tables (``quicktok._import_core``). A release of either that moves one of them breaks here, and only
here (``tests/tokenizers/test_engine_internals.py`` checks that no other module reads them)."""

from __future__ import annotations

import os


def mergeable_ranks(encoding) -> dict[bytes, int]:
    """The ordinary tokens' bytes and ranks of a tiktoken ``Encoding`` (the dict it was made with, not a copy)."""
    return encoding._mergeable_ranks


def special_tokens(encoding) -> dict[str, int]:
    """The special tokens' texts and ids of a tiktoken ``Encoding`` (the dict it was made with, not a copy)."""
    return encoding._special_tokens


def pattern(encoding) -> str:
    """The pre-tokenizer regex of a tiktoken ``Encoding``."""
    return encoding._pat_str


def write_quicktok_files(directory, name: str, specials: dict[str, int], scanner: str) -> None:
    """quicktok's small files for encoding ``name`` in ``directory``: its special tokens and its scanner (the ranks'
    file is written by :func:`sftpack.tokenizers.quicktok_vocab.vocab_bytes`'s caller)."""
    from quicktok import _import_core

    _import_core.write_files(directory, name, {}, specials, scanner, False)


def build_quicktok_tables(directory, scanner: str) -> None:
    """quicktok's character tables for ``scanner`` in ``directory``, from the data quicktok ships."""
    import quicktok
    from quicktok import _import_core

    _import_core.ensure_tables(directory, os.path.join(os.path.dirname(quicktok.__file__), "data"), scanner, False)
