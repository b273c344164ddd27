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
