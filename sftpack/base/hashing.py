"""The one file-hashing helper: a file's sha256 and size, read in 1 MiB blocks."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple


class FileDigest(NamedTuple):
    sha256: str  # hex
    size: int  # bytes read


def file_sha256(path: str | Path) -> FileDigest:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return FileDigest(digest.hexdigest(), size)
