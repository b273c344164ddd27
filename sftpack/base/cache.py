"""sftpack's directory of derived files, kept between runs: ``$SFTPACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/sftpack``,
else ``~/.cache/sftpack``. Everything in it is rebuilt from the inputs when missing or damaged; deleting it is safe.

    >>> import os
    >>> os.environ["SFTPACK_CACHE_DIR"] = "/tmp/somewhere"
    >>> str(cache_dir())
    '/tmp/somewhere'
    >>> del os.environ["SFTPACK_CACHE_DIR"]
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def cache_dir() -> Path:
    """The cache's root (not created here)."""
    given = os.environ.get("SFTPACK_CACHE_DIR")
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sftpack"


def staging_dir(final: Path) -> Path:
    """A new empty directory beside ``final`` (same file system) to fill before :func:`publish`."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = final.parent / f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    staging.mkdir()
    return staging


def publish(staging: Path, final: Path, replace: bool = False) -> None:
    """Move the filled ``staging`` directory to ``final`` in one rename. ``replace``: ``final`` was found damaged and
    is moved aside first; otherwise a ``final`` there already was published meanwhile by another process (the same
    contents) and is kept, ``staging`` removed."""
    if replace:
        discard(final)
    try:
        os.rename(staging, final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def discard(path: Path) -> None:
    """Remove a directory, first renamed so that no reader opens it half-removed."""
    aside = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.old"
    try:
        os.rename(path, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)
