"""Which engine turns text into token ids: quicktok where it provably gives tiktoken's tokens, tiktoken elsewhere.

quicktok (the optional package ``quicktok-v1``) is an exact C++ byte-level BPE with tiktoken's semantics, about
three times faster on one thread, and it releases the GIL while it encodes a batch. It is used only where its
tokens are tiktoken's by construction:

- it is given the tiktoken encoding's own ranks and special tokens (never a vocabulary of its own);
- the encoding's pre-tokenizer regex is, character for character, one quicktok compiles by hand: Qwen2/Qwen3's
  or o200k's (gpt-oss). Qwen3.5's regex is Qwen2's with ``\\p{M}`` added beside ``\\p{L}``, so on a text without
  combining marks the two split identically: Qwen3.5 uses quicktok's Qwen scanner on such text only;
- special tokens are found here as tiktoken finds them (the leftmost match; no special token is a prefix of
  another, else quicktok is not used) and only the text between them goes to quicktok, as ordinary text: both
  engines encode each piece of it on its own;
- per piece: no character that this Python's Unicode database calls unassigned (quicktok's character classes
  come from a newer Unicode than tiktoken's regex engine, and the two disagree exactly on characters assigned
  since), no lone surrogate and, for Qwen3.5, no combining mark; tiktoken encodes the other pieces.

Everything else, and everything when ``quicktok-v1`` is missing, broken or not wanted (``backend="tiktoken"``),
goes to tiktoken. Both give the same tokens, so the rows never depend on the backend; the build record counts
the conversations quicktok encoded whole, and those tiktoken encoded in whole or in part.
"""

from __future__ import annotations

import logging
import re
import weakref
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from sftpack.tokenizers.code_points import UnsafeTable
from sftpack.tokenizers.engine_internals import pattern, special_tokens
from sftpack.tokenizers.quicktok_tables import QuicktokTables

BACKENDS = ("auto", "tiktoken")  # auto: quicktok where it is exact, tiktoken elsewhere
TIKTOKEN = "tiktoken"

# The pre-tokenizer regexes quicktok implements (its own table, quicktok._import_core.KNOWN_PATTERNS, holds the
# same strings) -> (quicktok scanner, whether texts with combining marks must go to tiktoken).
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
                 r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN3_5_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+"""
                   r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
SCANNERS = {QWEN2_PATTERN: ("qwen", False), QWEN3_5_PATTERN: ("qwen", True), O200K_PATTERN: ("o200k", False)}
MAX_ID = 1 << 18  # quicktok's token ids are 18 bits
MAX_SPECIALS, MAX_SPECIAL_BYTES = 4096, 64  # its loader's limits

log = logging.getLogger("sftpack")
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def tiktoken_name() -> str:
    return f"tiktoken {_package_version('tiktoken')}"


class QuicktokEncoding:
    """quicktok over a tiktoken encoding's ranks and special tokens; :meth:`exact` says which texts it may encode.

    ``encode_to_numpy(text)`` equals tiktoken's ``encode_to_numpy(text, allowed_special=<all>)`` and
    ``encode_ordinary(text)`` tiktoken's ``encode_ordinary(text)`` for every text :meth:`exact` accepts."""

    def __init__(self, tokenizer, special_tokens: dict[str, int], unsafe: UnsafeTable):
        self.tokenizer = tokenizer
        self.special_tokens = special_tokens
        self.unsafe = unsafe  # indexed by code points: True where a text holding one must go to tiktoken
        self.name = f"quicktok-v1 {_package_version('quicktok-v1')}"
        # one regex over the special tokens' trie reads a character once (gpt-oss's 1,088: 0.11 of an alternation)
        self._specials = re.compile(f"({trie_pattern(special_tokens)})") if special_tokens else None

    def exact(self, texts: list[str]) -> np.ndarray:
        """Per text, whether quicktok's tokens are tiktoken's (no character that must go to tiktoken)."""
        joined = "".join(texts)
        if joined.isascii():  # ASCII is safe, and most text is
            return np.ones(len(texts), dtype=bool)
        starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=starts[1:])
        return self.exact_points(np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32), starts)

    def exact_points(self, points: np.ndarray, starts: np.ndarray, wide: np.ndarray | None = None) -> np.ndarray:
        """:meth:`exact` of the texts whose code points are ``points[starts[i]:starts[i + 1]]``; ``wide``, when the
        caller has it: the positions of the points that are not ASCII (no ASCII character is unsafe)."""
        exact = np.ones(len(starts) - 1, dtype=bool)
        wide = np.flatnonzero(points >= 0x80) if wide is None else wide
        # the few unsafe characters' texts, found by position: a running count over every character cost 2.5x more
        exact[np.searchsorted(starts, wide[self.unsafe[points[wide]]], side="right") - 1] = False
        return exact

    def encode_to_numpy(self, text: str) -> np.ndarray:
        """Token ids (int32) of ``text``, special-token text becoming the special token."""
        return self.encode_split(*self.split_specials(text))

    def split_specials(self, text: str) -> tuple[list[str], np.ndarray]:
        """The ordinary text around the special tokens, and the special tokens' ids: the Python half of
        :meth:`encode_to_numpy`, which holds the GIL (a build runs it while another thread encodes)."""
        # the leftmost special token first, then on after its end (where one starts, it is the only one: none is
        # another's prefix, else quicktok is not used), as tiktoken finds them
        return self.pieces_of(self.split_parts(text))

    def split_parts(self, text: str) -> list[str]:
        """``text`` cut at its special tokens: ordinary text and special-token text, alternating, ordinary first."""
        return [text] if self._specials is None else self._specials.split(text)

    def pieces_of(self, parts: list[str]) -> tuple[list[str], np.ndarray]:
        """:meth:`split_parts`' output as :meth:`split_specials` gives it."""
        specials = parts[1::2]
        ids = np.fromiter(map(self.special_tokens.__getitem__, specials), dtype=np.uint32, count=len(specials))
        return parts[0::2], ids

    def encode_split(self, pieces: list[str], special_ids: np.ndarray) -> np.ndarray:
        """Token ids (int32) of what :meth:`split_specials` gave: one call for all the ordinary text, which
        releases the GIL while it encodes, and the special tokens put back between the pieces."""
        return with_specials(*self.tokenizer.encode_batch(pieces, 1, False), special_ids)

    def encode(self, text: str) -> list[int]:
        return self.encode_to_numpy(text).tolist()

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token text encoded as ordinary text."""
        return self.tokenizer.encode_batch([text], 1, False)[0].tolist()


def trie_pattern(words) -> str:
    """A regex matching exactly ``words`` (none empty), as a trie: a shared prefix is written, and read, once.

    >>> print(trie_pattern(["<|im_start|>", "<|im_end|>", "<think>"]))
    <(?:think>|\\|im_(?:end\\|>|start\\|>))
    >>> re.findall(trie_pattern(["<|im_start|>", "<|im_end|>"]), "a<|im_end|>b<|im_e<|im_start|>")
    ['<|im_end|>', '<|im_start|>']
    """
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and "" not in node else f"(?:{'|'.join(branches)})"
        return body + "?" if "" in node else body  # a word ending here, another going on

    return pattern(trie)


@dataclass
class Run:
    """What the engines encode for a batch: tiktoken's ``text`` (no quicktok), or quicktok's split of it (the
    ordinary text between the special tokens, ``pieces``, and the special tokens' ids, ``special_ids``) with the
    pieces at ``slow`` left empty for tiktoken, which encodes them in one call as ``slow_text``."""

    text: str | None = None
    pieces: list | None = None
    special_ids: np.ndarray | None = None
    slow: np.ndarray | None = None  # indices into pieces
    slow_text: str | None = None  # those pieces, each followed by the separator special token
    separator: int = 0  # its id


def plan_concatenated(encoding, fast: QuicktokEncoding | None, texts, joined: str,
                      exact: np.ndarray | None = None) -> tuple[Run, np.ndarray]:
    """What :func:`engine_runs` then :func:`join_runs` encode into the tokens of ``joined``, the ``texts``
    concatenated (exact when the tokens of a concatenation are the concatenated tokens of its texts: each text starts
    with a special token), and per text whether quicktok encodes all of it. The Python part of the work is done
    here; ``exact``: :meth:`QuicktokEncoding.exact` of the texts, when the caller has it.

    Both engines encode the ordinary text between special tokens piece by piece, each piece on its own, so a
    text that quicktok may not encode whole (Qwen3.5's with a combining mark) sends to tiktoken only its pieces that
    quicktok may not encode: on 8,192 synthetic conversations, 1.20% of the characters instead of 1.86%, and the
    batch's ids are put together with one insertion instead of a search per text."""
    if fast is None:
        return Run(text=joined), np.zeros(len(texts), bool)
    exact = fast.exact(texts) if exact is None else exact
    parts = fast.split_parts(joined)
    pieces, special_ids = fast.pieces_of(parts)
    if exact.all():
        return Run(None, pieces, special_ids), exact
    # the pieces of the texts quicktok may not encode whole, found by their first character's position
    sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    piece_start = (np.cumsum(sizes) - sizes)[0::2]
    text_start = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=text_start[1:])
    owner = np.searchsorted(text_start, piece_start, side="right") - 1
    candidates = np.flatnonzero(~exact[np.minimum(owner, len(texts) - 1)])
    slow = candidates[~fast.exact([pieces[j] for j in candidates.tolist()])]
    if not len(slow):
        return Run(None, pieces, special_ids), exact
    # one tiktoken call for all of them: a special token after each keeps them apart (tiktoken encodes the text
    # between special tokens piece by piece, and none of these pieces holds special-token text)
    separator = next(iter(fast.special_tokens.items()))
    slow_text = separator[0].join([pieces[j] for j in slow.tolist()]) + separator[0]
    for j in slow.tolist():
        pieces[j] = ""
    return Run(None, pieces, special_ids, slow, slow_text, separator[1]), exact


def engine_runs(encoding, fast: QuicktokEncoding | None, run: Run) -> tuple:
    """The engines' own calls for the run, nothing else: each releases the GIL while it encodes. A build runs
    this on a thread while the worker's Python goes on; every numpy call left here would be one more wait for the
    GIL on that thread, so the ids are put together by :func:`join_runs` on the thread that holds it."""
    if run.pieces is None:
        return (encoding.encode_to_numpy(run.text, allowed_special="all"),)
    quick = fast.tokenizer.encode_batch(run.pieces, 1, False)
    if run.slow is None:
        return (quick,)
    return quick, encoding.encode_to_numpy(run.slow_text, allowed_special="all")


def join_runs(run: Run, outputs: tuple) -> np.ndarray:
    """Token ids (int32) of the batch's texts from :func:`engine_runs`' outputs: quicktok's tokens with the special
    tokens, and tiktoken's tokens of the pieces it encoded, put back where they belong.

    >>> run = Run(None, ["", "", "c"], np.array([7, 8], np.uint32), np.array([1]), "b|", 9)
    >>> quick = (np.array([3], np.uint32), np.array([0, 0, 0, 1]))  # "c" -> 3; pieces 0 and 1 give nothing
    >>> join_runs(run, (quick, np.array([4, 5, 9], np.uint32))).tolist()  # "b" -> 4 5, then the separator
    [7, 4, 5, 8, 3]
    """
    if run.pieces is None:
        return outputs[0].view(np.int32)
    tokens, offsets = outputs[0]
    if run.slow is None:
        return with_specials(tokens, offsets, run.special_ids)
    slow_ids = outputs[1]
    ends = np.flatnonzero(slow_ids == run.separator)  # one after each piece
    if len(ends) != len(run.slow):
        raise ValueError("tiktoken's tokens of the pieces it encoded do not end where the pieces end")
    sizes = np.diff(ends, prepend=-1) - 1
    slow_ids = np.delete(slow_ids, ends)
    # inserted into quicktok's tokens: special token k after piece k's tokens, a slow piece's tokens where its
    # (empty) piece's were; at one position, in the order the text has them
    m = len(run.special_ids)
    where = np.concatenate((offsets[1:m + 1], np.repeat(offsets[run.slow], sizes)))
    order = np.concatenate((2 * np.arange(m) + 1, np.repeat(2 * run.slow, sizes)))
    values = np.concatenate((run.special_ids, slow_ids.astype(np.uint32, copy=False)))
    by_order = np.argsort(order, kind="stable")
    return np.insert(tokens, where[by_order], values[by_order]).view(np.int32)


def with_specials(tokens: np.ndarray, offsets: np.ndarray, special_ids: np.ndarray) -> np.ndarray:
    """quicktok's tokens of the pieces around the special tokens, with the special tokens' ids put back (int32)."""
    if len(special_ids):
        tokens = np.insert(tokens, offsets[1:-1], special_ids)
    return tokens.view(np.int32)


# Engines built in this process, by their tables' key (:class:`QuicktokTables`): one per vocabulary, whatever the
# number of builds (quicktok's constructor takes 0.4-0.9 s for Qwen3.5's 248k ranks); None where quicktok failed.
_ENGINES: dict[str, QuicktokEncoding | None] = {}
_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # encoding -> its key, once computed


def quicktok_for(encoding, backend: str = "auto", built=None) -> QuicktokEncoding | None:
    """The quicktok engine for a tiktoken ``encoding``, or None: tiktoken encodes everything (``backend`` is
    ``"tiktoken"``, the encoding is not one quicktok implements, or the package is missing or broken, which is
    warned about once). Built once per vocabulary and process, from tables cached on disk
    (:mod:`sftpack.tokenizers.quicktok_tables`); ``built()``, if given, is called once the engine's tables are
    allocated, before it is checked against tiktoken."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown tokenizer backend {backend!r}; known: {', '.join(BACKENDS)}")
    scanner = SCANNERS.get(pattern(encoding))
    if backend == TIKTOKEN or scanner is None or not _expressible(encoding):
        return None
    try:
        import quicktok  # noqa: F401
    except ImportError:
        _warn_once("quicktok-v1 is not installed: tokenizing with tiktoken only (the same tokens, about 3x slower); "
                   "pip install quicktok-v1")
        return None
    key = _KEYS.get(encoding)
    tables = None
    if key is None:
        tables = QuicktokTables(encoding, scanner[0])
        key = _KEYS[encoding] = tables.key
    if key not in _ENGINES:
        _ENGINES[key] = _build(encoding, scanner, tables or QuicktokTables(encoding, scanner[0]), built)
    return _ENGINES[key]


def forget_engines() -> None:
    """Drop the engines built in this process (the next build builds its own again)."""
    _ENGINES.clear()
    _KEYS.clear()


def _build(encoding, scanner: tuple[str, bool], tables: QuicktokTables, built=None) -> QuicktokEncoding | None:
    fast, broken = None, None
    try:
        fast = QuicktokEncoding(tables.load(), dict(special_tokens(encoding)), UnsafeTable(scanner[1]))
    except Exception as e:  # a broken install: a missing data file, an incompatible build
        broken = f"{type(e).__name__}: {str(e)[:200]}"
    if built is not None and fast is not None:
        built()
    try:
        broken = broken or _self_check(fast, encoding)
    except Exception as e:  # a build that loads but does not encode
        broken = f"{type(e).__name__}: {str(e)[:200]}"
    if broken:
        _warn_once(f"quicktok-v1 cannot be used ({broken}): tokenizing with tiktoken only (the same tokens, slower)")
        return None
    return fast


def _expressible(encoding) -> bool:
    specials = special_tokens(encoding)
    if max([*specials.values(), encoding.max_token_value]) >= MAX_ID or len(specials) > MAX_SPECIALS:
        return False
    if any(not 0 < len(token.encode()) <= MAX_SPECIAL_BYTES for token in specials):
        return False
    # with no special token a prefix of another, the leftmost match is the same whatever order an engine tries
    # them in (tiktoken's order is a hash map's)
    ordered = sorted(specials)
    return not any(b.startswith(a) for a, b in zip(ordered, ordered[1:]))


_PROBE = ("<|im_start|>user\nHello, world! It's 2024: \u00e9t\u00e9 \u2192 \u6771\u4eac 12345 \U0001f600"
          "   \t\n\n def f(x):\n\treturn x**2 <|im_end|>\n")


def _self_check(fast: QuicktokEncoding, encoding) -> str | None:
    """Why this quicktok build cannot be trusted, or None (a wrongly built or mismatched install shows here)."""
    if fast.tokenizer.n_vocab != encoding.n_vocab:
        return f"{fast.tokenizer.n_vocab} token ids, tiktoken {encoding.n_vocab}"
    expected = encoding.encode(_PROBE, allowed_special="all")
    if fast.encode(_PROBE) != expected:
        return "its tokens differ from tiktoken's on a probe text"
    return None
