"""A tiktoken cache seeded with o200k_base.tiktoken for the gpt-oss tests (no network): the rank file is converted
from the copy the `quicktok-v1` package ships and used only when its sha256 equals the expected_hash tiktoken itself
checks downloads against. Nothing here imports sftpack."""

from __future__ import annotations

import base64
import hashlib
import inspect
import re
import struct
from pathlib import Path

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def tiktoken_expected_hash() -> str:
    """The sha256 tiktoken checks o200k_base.tiktoken against, read from tiktoken's own source."""
    from tiktoken_ext import openai_public

    source = inspect.getsource(openai_public.o200k_base)
    assert O200K_URL in source
    return re.search(r'expected_hash="([0-9a-f]{64})"', source).group(1)


def o200k_base_from_quicktok() -> bytes:
    """quicktok's ``data/o200k.vocab`` (u32 count, then per token: u16 length, bytes, u32 rank) written in
    tiktoken's format: ``base64(token) rank`` lines in rank order."""
    import quicktok

    data = (Path(quicktok.__file__).parent / "data" / "o200k.vocab").read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    pos, tokens = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, pos)
        raw = data[pos + 2 : pos + 2 + length]
        (rank,) = struct.unpack_from("<I", data, pos + 2 + length)
        pos += 6 + length
        tokens.append((rank, raw))
    assert pos == len(data)
    return b"".join(base64.b64encode(raw) + b" " + str(rank).encode() + b"\n" for rank, raw in sorted(tokens))


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
