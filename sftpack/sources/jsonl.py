"""A ``.jsonl`` source: line offsets found once, lines parsed only when the build reaches them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from sftpack.sources.base import RowError, Source, SourceChanged, SourceInfo, json_type, source_id

# By byte value: neither JSON whitespace nor a byte of the UTF-8 byte-order mark (EF BB BF): a line of only those
# is not a row (no JSON text is made of them alone).
_SOLID = np.ones(256, bool)
_SOLID[[9, 10, 13, 32, 0xEF, 0xBB, 0xBF]] = False


class JsonLinesSource(Source):
    """A JSONL file read lazily: only line offsets are kept in memory. Lines are read with ``pread``, not
    through a memory map, so a file cut short while the build reads it is an error (:class:`SourceChanged`),
    not a SIGBUS. Blank lines, and lines of only whitespace and byte-order marks, are not rows."""

    BLOCK = 4 << 20  # bytes scanned at a time when the file is opened

    def __init__(self, path: Path, info: SourceInfo):
        self.path = path
        self.info = info
        self._fd = os.open(path, os.O_RDONLY)
        self._size = size = os.fstat(self._fd).st_size
        bom = 3 if size >= 3 and os.pread(self._fd, 3, 0) == b"\xef\xbb\xbf" else 0  # a UTF-8 BOM is not JSON
        newlines, content = [], []  # content: whether each line holds anything but whitespace
        carry = False  # whether the line running into the next block holds content so far
        for offset in range(bom, size, self.BLOCK):
            block = np.frombuffer(self._read(offset, min(self.BLOCK, size - offset)), np.uint8)
            ends = np.flatnonzero(block == 10)
            starts = np.concatenate(([0], ends + 1))  # each line's bytes (and its newline) up to the next start
            has = np.zeros(len(starts), bool)
            inside = starts < len(block)  # (a block ending in a newline: the last line starts past it, empty)
            if inside.any():
                has[inside] = np.logical_or.reduceat(_SOLID[block], starts[inside])
            has[0] |= carry
            newlines.append(ends + offset)
            content.append(has[:-1])
            carry = bool(has[-1])
        ends = np.concatenate(newlines + [np.array([size], np.int64)])
        keep = np.concatenate(content + [np.array([carry])])
        starts = np.concatenate(([bom], ends[:-1] + 1))
        self.starts, self.ends = starts[keep], ends[keep]
        self.lines = np.flatnonzero(keep) + 1  # each row's line number in the file (1-based), for messages

    def __len__(self) -> int:
        return len(self.starts)

    def _read(self, offset: int, n: int) -> bytes:
        data = os.pread(self._fd, n, offset)
        if len(data) < n:
            raise SourceChanged(self.changed() or f"source file {self.path} changed while being read")
        return data

    def changed(self) -> str | None:
        now = os.fstat(self._fd).st_size
        if now != self._size:
            return f"source file {self.path} changed while being read ({self._size:,} bytes when opened, {now:,} now)"
        return None

    def first_keys(self) -> list[str] | None:
        if not len(self):
            return None
        try:
            row = json.loads(self._read(int(self.starts[0]), int(self.ends[0] - self.starts[0])))
        except (ValueError, RecursionError):
            return None
        return list(row) if isinstance(row, dict) else None

    def take(self, indices):
        out = []
        for k in indices:
            line = self._read(int(self.starts[k]), int(self.ends[k] - self.starts[k]))
            n = int(self.lines[k])
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
                out.append(RowError("invalid_json", f"line {n}: {e}", f"line-{n}"))
                continue
            if not isinstance(row, dict):
                out.append(RowError("row_not_object", f"line {n} is a JSON {json_type(row)}, not an object", f"line-{n}"))
                continue
            rid = source_id(row.get("id"), k, f"line {n}", f"line-{n}")  # a JSONL row is named by its line
            if isinstance(rid, RowError):
                out.append(rid)
                continue
            out.append((rid, self.messages_of(row, f"line {n}")))
        return out
