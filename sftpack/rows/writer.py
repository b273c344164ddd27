"""The writer every rows format has: :class:`RowsWriter`, the duties the build relies on whatever the format, and
:class:`RowSink`, what the build writes rows through (it counts and hashes them, the format's writer stores them).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from sftpack.rows.hashing import update_rows_sha256
from sftpack.rows.model import Row


class RowsWriter(ABC):
    """A rows format's writer: ``Writer(path, row_tokens, build_name)`` creates ``path`` and writes rows into it.

    Its duties, which the build relies on whatever the format:

    - ``write(row)`` stores one :class:`~sftpack.rows.model.Row`, in order; it raises rather than drop one.
    - ``close() -> (sha256, bytes)`` finishes the file, makes it durable (written back and fsynced: the build renames
      it into place next) and returns the sha256 and size of its bytes as they are on disk.
    - ``abort()`` releases everything the writer holds (threads, descriptors) without finishing the file, after an
      error or a signal, also after a ``close`` that failed; the build then removes the file. It raises only what
      stopping its own threads raises.
    - Fork safety: the build may fork (its workers) after the writer is made and before the first row, and may make
      the writer in a forked process of its own (:mod:`sftpack.builder.writer_process`): a writer starts no thread
      and holds no lock before its first ``write``.
    - The rows' hash: a writer that hashes the rows itself (off the caller's thread) sets :attr:`hashes_rows` and
      answers :attr:`rows_sha256` (:func:`sftpack.rows.hashing.update_rows_sha256`); otherwise :class:`RowSink`
      hashes them.

    :class:`sftpack.rows.durable.DurableFile` does the writeback, the fsync, the file's sha256 and the abort for a
    writer; a format's writer only encodes rows.
    """

    hashes_rows = False  # True: rows_sha256 is the writer's own hash of the rows written
    timings: Mapping[str, float] = MappingProxyType({})  # seconds by stage for the build's timings (none by default)

    def __init__(self, path: Path, row_tokens: int, build_name: str):
        self.path, self.row_tokens, self.build_name = Path(path), row_tokens, build_name

    @abstractmethod
    def write(self, row: Row) -> None: ...

    @abstractmethod
    def close(self) -> tuple[str, int]: ...

    @abstractmethod
    def abort(self) -> None: ...

    @property
    def rows_sha256(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} does not hash the rows (hashes_rows is False)")


class RowSink:
    """What the build writes rows through: counts them and hashes them (``rows_sha256``), whatever the format;
    the format's writer stores them. A writer that hashes the rows itself (the parquet writer does it on its own
    thread, off the packing loop) says so (:attr:`RowsWriter.hashes_rows`) and the sink takes that hash instead."""

    def __init__(self, writer: RowsWriter):
        if not isinstance(writer, RowsWriter):
            raise TypeError(f"{type(writer).__name__} is not a sftpack.rows.writer.RowsWriter")
        self.writer = writer
        self.rows = 0
        self.supervised = 0
        self._hash = None if writer.hashes_rows else hashlib.sha256()

    def write(self, row: Row) -> None:
        if self._hash is not None:
            update_rows_sha256(self._hash, row.tokens[None], row.loss_mask[None])
        self.rows += 1
        self.supervised += row.supervised
        self.writer.write(row)

    @property
    def rows_sha256(self) -> str:
        return self._hash.hexdigest() if self._hash is not None else self.writer.rows_sha256

    @property
    def timings(self) -> Mapping[str, float]:
        return self.writer.timings

    def abort(self) -> None:
        """Stop writing after an error (the build removes the temporary file)."""
        self.writer.abort()

    def close(self) -> tuple[str, int]:
        """Finish the file; its (sha256, size in bytes)."""
        return self.writer.close()
