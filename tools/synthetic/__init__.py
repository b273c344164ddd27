"""Deterministic synthetic conversations in the schema of ``allenai/tulu-3-sft-mixture``.

Each row is ``{"id": str, "messages": [{"role", "content"}, ...], "source": str}`` with roles
``system`` (first only) / ``user`` / ``assistant`` alternating and ending on an assistant turn, like Tulu 3.
The mix is modelled on Tulu 3's sources (persona math, code, Aya multilingual, WildChat, FLAN, NuminaMath-TIR,
safety data, ...): system prompts (~15%), multi-turn (~20%, 2-6 pairs), fenced code with indentation, LaTeX,
non-Latin scripts and emoji, a long tail with ~0.5% conversations over 40,000 characters (> 8,192 Qwen
tokens), and ~0.3% of the oddities real data has (empty or whitespace-only answers, chat-template control text
inside a user message, leading/trailing newlines). The text is assembled from an embedded Zipf-weighted word
list of a few thousand English word forms plus smaller lists for other languages: it is not language, but its
tokenization and compression behave roughly like real text.

The parts, lowest first: :mod:`.lexicon` (word lists), :mod:`.tables` (the lookup tables drawn from),
:mod:`.draw` (random draws), :mod:`.prose`, :mod:`.programs` and :mod:`.latex` (kinds of text),
:mod:`.sources` (one generator per Tulu source), :mod:`.conversation` (one row) and :mod:`.writers` (Arrow and
Parquet files).

Determinism: conversation ``i`` depends only on ``(seed, i)`` (its own ``random.Random(f"...:{seed}:{i}")``,
seeded through SHA-512 of the string, stable across Python versions and platforms) and only uses stable
operations (``getrandbits``, ``random``, ``choices`` without weights; ``randrange`` and ``shuffle`` when the
tables are built at import; integer or single IEEE float operations; no ``hash()``, no float ``sum``, no
transcendental functions, no set ordering). Generating ``n`` conversations therefore yields the prefix of
generating any larger ``n`` (checked identical on CPython 3.11 and 3.12).

Speed: about 0.1 ms per conversation (~3,200 characters on average): 200,000 conversations take 20-30 s on one
core (``synthetic_conversations``; writing Arrow or Parquet adds a little).

    >>> rows = list(synthetic_conversations(3, seed=7))
    >>> rows == list(synthetic_conversations(5, seed=7))[:3]
    True
    >>> sorted(rows[0])
    ['id', 'messages', 'source']
    >>> conversation(7, 2) == rows[2]
    True
"""

from __future__ import annotations

from .conversation import conversation, synthetic_conversations
from .sources import SOURCES
from .writers import (
    PARQUET_OPTIONS,
    SCHEMA,
    record_batch,
    synthetic_batches,
    write_synthetic_arrow,
    write_synthetic_parquet,
)

__all__ = [
    "PARQUET_OPTIONS",
    "SCHEMA",
    "SOURCES",
    "conversation",
    "record_batch",
    "synthetic_batches",
    "synthetic_conversations",
    "write_synthetic_arrow",
    "write_synthetic_parquet",
]
