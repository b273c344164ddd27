"""The one module that reads what tiktoken and quicktok keep private: a tiktoken ``Encoding``'s ranks, special
tokens and pre-tokenizer regex (no public accessor returns them), and quicktok's writer of an encoding's files and
builder of its tables (``quicktok._import_core``); and a tiktoken ``Encoding`` made without its core
(:func:`deferred_encoding`). A release of either that moves one of them breaks here, and only
here (``tests/tokenizers/test_engine_internals.py`` checks that no other module reads them)."""

from __future__ import annotations

import functools
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


def deferred_encoding(name: str, pat_str: str, mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int]):
    """A ``tiktoken.Encoding`` whose core (the Rust tables of its ranks: 0.2 s for Qwen3.5's 248k, the GIL held) is
    made when first used or by :func:`build_core`, so that a build makes it beside the huge-page collapse of
    quicktok's tables; everything else is tiktoken's own. Pickled, it is a plain ``tiktoken.Encoding``."""
    return _deferred_class()(name, pat_str, mergeable_ranks, special_tokens)


def build_core(encoding) -> None:
    """Make a :func:`deferred_encoding`'s core now (nothing for any other encoding)."""
    getattr(encoding, "_core_bpe")


def plain_encoding(name: str, pat_str: str, mergeable_ranks: dict[bytes, int], special_tokens: dict[str, int]):
    import tiktoken

    return tiktoken.Encoding(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens)


@functools.cache
def _deferred_class():
    import tiktoken
    from tiktoken import _tiktoken

    class DeferredEncoding(tiktoken.Encoding):
        def __init__(self, name, pat_str, mergeable_ranks, special_tokens):
            # tiktoken.Encoding.__init__'s attributes, but for _core_bpe
            self.name, self._pat_str = name, pat_str
            self._mergeable_ranks, self._special_tokens = mergeable_ranks, special_tokens
            self.max_token_value = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            self._special_token_values = set(special_tokens.values())

        def __getattr__(self, attribute):  # only for an attribute not set yet
            if attribute != "_core_bpe":
                raise AttributeError(attribute)
            core = self._core_bpe = _tiktoken.CoreBPE(self._mergeable_ranks, self._special_tokens, self._pat_str)
            return core

        def __reduce__(self):
            return plain_encoding, (self.name, self._pat_str, self._mergeable_ranks, self._special_tokens)

    return DeferredEncoding
