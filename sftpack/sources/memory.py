"""Rows already in memory: a ``.json`` file holding a list, or a Python caller's rows."""

from __future__ import annotations

from sftpack.sources.base import RowError, Source, SourceInfo, generated_id, source_id


class ListSource(Source):
    """Rows already in memory (a ``.json`` file holding a list, or Python callers)."""

    def __init__(self, rows: list, info: SourceInfo):
        self.rows = rows
        self.info = info

    def __len__(self) -> int:
        return len(self.rows)

    def first_keys(self) -> list[str] | None:
        return list(self.rows[0]) if self.rows and isinstance(self.rows[0], dict) else None

    def take(self, indices):
        out = []
        for k in indices:
            row = self.rows[k]
            if not isinstance(row, dict):
                out.append(RowError("row_not_object", f"row {k} is a {type(row).__name__}", generated_id(k)))
                continue
            rid = source_id(row.get("id"), k)
            if isinstance(rid, RowError):
                out.append(rid)
                continue
            out.append((rid, self.messages_of(row, f"row {k}")))
        return out


def source_from_rows(rows: list[dict], name: str = "in-memory rows") -> Source:
    """A source over Python rows (tests, notebooks)."""
    return ListSource(rows, SourceInfo(name, "memory"))
