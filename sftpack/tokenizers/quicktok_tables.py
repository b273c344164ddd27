"""quicktok's files for a tiktoken encoding (its ranks, special tokens, scanner and character tables), kept in
sftpack's cache (:func:`sftpack.base.cache.cache_dir`) under ``quicktok/<ranks sha256>-<rest>``: the sha256 of the
ranks file's bytes, then a short hash of everything else the files hold (the special tokens, the scanner, the
quicktok version), so that two vocabularies never share an entry.

An entry is written into a directory of its own beside the cache's and renamed into place (a reader never sees it
half-written), and carries ``SHA256SUMS``: each file's sha256, checked every time it is loaded. A missing or damaged
entry (a file cut short, changed or absent, a vocabulary that is not this one) is rebuilt. Where the cache cannot be
written, the files go to a temporary directory removed after loading, as without a cache."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sftpack.base.cache import cache_dir, publish, staging_dir
from sftpack.tokenizers.engine_internals import (build_quicktok_tables, mergeable_ranks, special_tokens,
                                                write_quicktok_files)
from sftpack.tokenizers.quicktok_vocab import vocab_bytes
from sftpack.tokenizers.ranks_cache import known_vocab

NAME = "sftpack"  # the encoding's name inside an entry
FORMAT = 1  # the layout of an entry; a new one never reads an old one
SUMS = "SHA256SUMS"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _quicktok_version() -> str:
    try:
        return version("quicktok-v1")
    except PackageNotFoundError:
        return "unknown"


class QuicktokTables:
    """The files quicktok loads for ``encoding`` with ``scanner``: :attr:`key` names them (the ranks' sha256 first);
    :meth:`load` returns the ``quicktok.Tokenizer`` read from the cache's verified entry."""

    def __init__(self, encoding, scanner: str):
        self.encoding, self.scanner = encoding, scanner
        ranks = mergeable_ranks(encoding)
        # from the ranks' cache entry where they were read from one (sftpack.tokenizers.ranks_cache), else 0.07 s
        known = known_vocab(ranks)
        self.vocab, self.ranks_sha256 = known if known is not None else (vocab := vocab_bytes(ranks), _sha256(vocab))
        rest = json.dumps({"format": FORMAT, "scanner": scanner, "quicktok": _quicktok_version(),
                           "special_tokens": sorted(special_tokens(encoding).items())})
        self.key = f"{self.ranks_sha256}-{_sha256(rest.encode())[:16]}"

    @property
    def entry(self) -> Path:
        return cache_dir() / "quicktok" / self.key

    def load(self):
        import quicktok

        entry = self.entry
        try:
            state = self.check(entry)
            if state != "ok":
                staging = staging_dir(entry)
                try:
                    self.write(staging)
                except BaseException:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
                publish(staging, entry, replace=state == "damaged")
                if self.check(entry) != "ok":
                    raise OSError(f"{entry}: not readable after writing it")
        except OSError:  # a cache that cannot be written (read-only, full): the files in a temporary directory
            directory = tempfile.mkdtemp(prefix="sftpack-quicktok-")
            try:
                self.write(directory)
                return quicktok.Tokenizer(NAME, directory)
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        return quicktok.Tokenizer(NAME, str(entry))

    def write(self, directory) -> None:
        """The entry's files and their sums into ``directory``."""
        # quicktok's own writer for the small files (the special tokens, the scanner); the ranks' file from numpy
        # (vocab_bytes: half the time of quicktok's writer)
        write_quicktok_files(directory, NAME, special_tokens(self.encoding), self.scanner)
        Path(directory, NAME + ".vocab").write_bytes(self.vocab)
        build_quicktok_tables(directory, self.scanner)
        sums = {name: _sha256(Path(directory, name).read_bytes()) for name in sorted(os.listdir(directory))}
        Path(directory, SUMS).write_text("".join(f"{sha}  {name}\n" for name, sha in sums.items()))

    def check(self, entry: Path) -> str:
        """``ok``, ``missing`` or ``damaged``: every file listed in ``SHA256SUMS`` there with its sum, nothing else,
        and the ranks file this encoding's."""
        if not entry.is_dir():
            return "missing"
        try:
            lines = (entry / SUMS).read_text().splitlines()
            sums = {name: sha for sha, name in (line.split("  ", 1) for line in lines)}
            names = set(os.listdir(entry)) - {SUMS}
            if names != set(sums) or sums.get(NAME + ".vocab") != self.ranks_sha256:
                return "damaged"
            if any(_sha256((entry / name).read_bytes()) != sha for name, sha in sums.items()):
                return "damaged"
        except (OSError, ValueError, UnicodeDecodeError):
            return "damaged"
        return "ok"

