"""tiktoken's and quicktok's private attributes are read in one module, ``sftpack/tokenizers/engine_internals.py``,
and what it reads is what the engines were made with."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from sftpack.tokenizers import engine_internals

PACKAGE = Path(__file__).resolve().parents[2] / "sftpack"
# tiktoken.Encoding's private attributes, and quicktok's private modules
PRIVATE = {"_mergeable_ranks", "_special_tokens", "_pat_str", "_core_bpe", "_import_core", "_tiktoken"}


def private_names(source: str) -> set[str]:
    """The private engine names the code uses (names in strings and comments do not count)."""
    return {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.NAME and t.string in PRIVATE}


def test_no_other_module_reads_the_engines_private_names():
    readers = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                     if private_names(path.read_text(encoding="utf-8")))
    assert readers == ["tokenizers/engine_internals.py"]
    assert private_names("x = enc._special_tokens  # enc._pat_str\ny = '_core_bpe'") == {"_special_tokens"}


def test_the_adapter_returns_what_the_encoding_was_made_with():
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    specials = {"<|end|>": 257}
    pattern = r"\w+|\s+|[^\w\s]+"
    encoding = tiktoken.Encoding("toy", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    assert engine_internals.mergeable_ranks(encoding) == ranks
    assert engine_internals.special_tokens(encoding) == specials
    assert engine_internals.pattern(encoding) == pattern
    assert encoding.encode("ab<|end|>", allowed_special="all") == [256, 257]  # the same engine, unchanged


def test_a_deferred_encoding_makes_its_core_when_first_used_and_encodes_as_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    import pickle

    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abab": 257}
    specials = {"<|end|>": 258}
    pattern = r"\w+|\s+|[^\w\s]+"
    plain = tiktoken.Encoding("toy", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    deferred = engine_internals.deferred_encoding("toy", pattern, ranks, specials)
    assert "_core_bpe" not in vars(deferred)  # not made yet
    assert deferred.max_token_value == plain.max_token_value and deferred.n_vocab == plain.n_vocab
    text = "abab ab, a<|end|>b"
    assert deferred.encode(text, allowed_special="all") == plain.encode(text, allowed_special="all") == [
        257, 32, 256, 44, 32, 97, 258, 98]
    assert "_core_bpe" in vars(deferred)  # made by that first use, once
    other = engine_internals.deferred_encoding("toy", pattern, ranks, specials)
    engine_internals.build_core(other)
    assert "_core_bpe" in vars(other)
    copy = pickle.loads(pickle.dumps(engine_internals.deferred_encoding("toy", pattern, ranks, specials)))
    assert type(copy) is tiktoken.Encoding and copy.encode(text, allowed_special="all") == plain.encode(
        text, allowed_special="all")
    with pytest.raises(AttributeError):
        deferred.no_such_attribute
