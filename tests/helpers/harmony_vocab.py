"""A tiktoken cache seeded with o200k_base.tiktoken for the gpt-oss tests (no network): the rank file is converted
from the copy the `quicktok-v1` package ships and used only when its sha256 equals the expected_hash tiktoken itself
checks downloads against (read here from tiktoken's source, independently of sftpack)."""

from __future__ import annotations

import hashlib
import inspect
import re
from pathlib import Path

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def tiktoken_expected_hash() -> str:
    """The sha256 tiktoken checks o200k_base.tiktoken against, read from tiktoken's own source."""
    from tiktoken_ext import openai_public

    source = inspect.getsource(openai_public.o200k_base)
    assert O200K_URL in source
    return re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1)


def o200k_base_from_quicktok() -> bytes:
    """quicktok's ``data/o200k.vocab`` written in tiktoken's format by sftpack's converter; whoever wrote it, the
    bytes are used only when their sha256 is tiktoken's own expected hash (:func:`seed_caches`)."""
    from sftpack.tokenizers.quicktok_o200k import quicktok_vocab_path, tiktoken_lines

    return tiktoken_lines(quicktok_vocab_path().read_bytes())


def seed_caches(directory: Path) -> tuple[Path, Path]:
    """(tiktoken cache dir, harmony encodings dir), both holding the hash-checked o200k_base ranks."""
    content = o200k_base_from_quicktok()
    assert hashlib.sha256(content).hexdigest() == tiktoken_expected_hash(), "quicktok's o200k copy is not tiktoken's file"
    cache, encodings = directory / "tiktoken-cache", directory / "harmony-encodings"
    cache.mkdir(parents=True, exist_ok=True)
    encodings.mkdir(parents=True, exist_ok=True)
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(content)  # tiktoken's cache key
    (encodings / "o200k_base.tiktoken").write_bytes(content)  # openai-harmony's TIKTOKEN_ENCODINGS_BASE layout
    return cache, encodings
