"""The walk over the source in permutation order: which source rows the packer has reached, and the skips, the
control text and the duplicate ids counted as it reaches them (docs/spec.md, "Packing")."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.builder.chunks import ChunkResult
from sftpack.builder.record import BuildStats
from sftpack.families.conversation import role_named


@dataclass
class _WalkedChunk:
    """A chunk the walk has not yet passed: its first source row, the source rows of its kept conversations, its
    skips ``(source row, (reason, detail), id)``, ``(kept index, notes, id)`` of the kept conversations the record
    counts something of (control text, unrendered or unknown fields), and how many of each the
    walk has counted."""

    start: int
    kept_rows: list
    skips: list
    control: list
    skips_counted: int = 0
    control_counted: int = 0


class Walk:
    """The walk over the source in permutation order: skips and control text are counted as the packer reaches
    them (``pulled(n)``: ``n`` kept conversations pulled; ``None``: the source ended), as if conversations were
    pulled one by one; with ``strict`` the first skip reached is the error."""

    def __init__(self, stats: BuildStats, strict: bool = False):
        self.stats, self.strict = stats, strict
        self.chunks: deque[_WalkedChunk] = deque()
        self.rows = 0  # source rows handed to the packer
        self.kept = 0
        self.kept_passed = 0  # kept conversations of the chunks the walk has passed (left self.chunks)
        self.unchecked: list = []  # ids of kept conversations from number unchecked_from on (checked for duplicates)
        self.unchecked_from = 0
        self.checked = 0
        self.fast: deque = deque()  # per chunk not yet pulled past: (first kept index, running count of its fast flags)

    def add(self, result: ChunkResult) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """Register a chunk; its kept conversations ``(ids, lengths, tokens, masks)`` for the packer."""
        kept = [p for p, status in enumerate(result.status) if status is None]
        index = {p: self.kept + i for i, p in enumerate(kept)}
        skips = [(self.rows + p, status, result.ids[p]) for p, status in enumerate(result.status) if status is not None]
        control = sorted((index[p], notes, result.ids[p]) for p, notes in result.control_text)
        self.chunks.append(_WalkedChunk(self.rows, [self.rows + p for p in kept], skips, control))
        self.rows += len(result.status)
        self.kept += len(kept)
        ids = [result.ids[p] for p in kept]
        self.unchecked.extend(ids)
        if result.fast is not None and result.fast.any():
            # counted once here: the packer asks for the count at every row
            self.fast.append((self.kept - len(kept), np.cumsum(result.fast, dtype=np.int64).tolist()))
        return ids, result.lengths, result.tokens, result.masks

    def pulled(self, n: int | None) -> None:
        stats = self.stats
        if n is None:
            upto, n = self.rows, self.kept
        else:
            upto = stats.reached  # conversation n was in a chunk already walked past
            first_kept = self.kept_passed
            for chunk in self.chunks:
                if 0 < n - first_kept <= len(chunk.kept_rows):
                    upto = chunk.kept_rows[n - first_kept - 1] + 1
                    break
                first_kept += len(chunk.kept_rows)
        while self.chunks:
            chunk = self.chunks[0]
            while chunk.skips_counted < len(chunk.skips) and chunk.skips[chunk.skips_counted][0] < upto:
                _, (reason, detail), conv_id = chunk.skips[chunk.skips_counted]
                if self.strict:
                    raise UsageError(f"--strict: conversation {conv_id!r}: {reason}: {detail}")
                stats.skipped[reason] += 1
                if reason == "unknown_role":  # which role: the summary and the record name it
                    stats.unknown_roles[role_named(detail)] += 1
                chunk.skips_counted += 1
            while chunk.control_counted < len(chunk.control) and chunk.control[chunk.control_counted][0] < n:
                _, notes, conv_id = chunk.control[chunk.control_counted]
                stats.note(notes, conv_id if self.strict else None)  # counted as reached, like the skips
                chunk.control_counted += 1
            end = chunk.start + len(chunk.kept_rows) + len(chunk.skips)
            if end > upto or chunk.control_counted < len(chunk.control):
                break
            self.kept_passed += len(self.chunks.popleft().kept_rows)
        stats.reached = upto
        self._count_fast(n)
        if self.checked < n:  # two packed conversations with one id: provenance cannot tell them apart
            # a slice's ids at once: the ones not new are those the set did not grow by (0.37 of the time one by one)
            ids = self.unchecked[self.checked - self.unchecked_from : n - self.unchecked_from]
            seen = stats.ids_seen
            before = len(seen)
            seen.update(ids)
            stats.duplicate_ids += len(ids) - (len(seen) - before)
            self.checked = n
            if self.checked - self.unchecked_from > 4 * 4096:
                del self.unchecked[: self.checked - self.unchecked_from]
                self.unchecked_from = self.checked

    def _count_fast(self, n: int) -> None:
        """``stats.fast``: how many of the first ``n`` kept conversations the faster engine encoded."""
        stats = self.stats
        while self.fast and self.fast[0][0] < n:
            first, counted = self.fast[0]
            done = min(n - first, len(counted))
            stats.fast = stats.fast_before + counted[done - 1]
            if done < len(counted):
                return
            stats.fast_before = stats.fast
            self.fast.popleft()
