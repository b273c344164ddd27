"""The files a build wrote. Their names state the build's parameters (``NAME-rows6.parquet``,
``NAME-seed7-rowtokens512-rows1.parquet``: see sftpack.builder.stream_names), so a test that built once into a directory
finds them by suffix."""

from __future__ import annotations

from pathlib import Path


def built(out, suffix: str = ".parquet") -> Path:
    """The one file ending in ``suffix`` (``.parquet``, ``.build.yaml``) that a build wrote into ``out``."""
    found = sorted(p for p in Path(out).glob(f"*{suffix}") if not p.name.startswith("."))
    assert len(found) == 1, f"expected one *{suffix} in {out}, found {[p.name for p in found]}"
    return found[0]


def built_names(out) -> list[str]:
    """The rows files and build records in ``out`` (none after a build that failed; none in no directory)."""
    if not Path(out).is_dir():
        return []
    return sorted(p.name for p in Path(out).iterdir() if p.name.endswith((".parquet", ".build.yaml"))
                  and not p.name.startswith("."))
