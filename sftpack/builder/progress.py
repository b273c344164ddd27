"""What a build says while it runs: the progress bar on stderr, and where its wall time goes (``SFTPACK_TIMINGS``)."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter

from sftpack.builder.record import BuildRecord, BuildStats


class Clock:
    """Where a build's wall time goes: written as JSON to the file named by ``SFTPACK_TIMINGS`` when it is set (a
    user setting, see the README; never into the outputs, which must not depend on time)."""

    def __init__(self):
        self.last = time.perf_counter()
        self.phases: dict[str, float] = {}
        self.seconds: Counter = Counter()  # the parent's wait for results, the workers' seconds by stage

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = now - self.last
        self.last = now

    def report(self, workers: int, writer, record: BuildRecord) -> None:
        path = os.environ.get("SFTPACK_TIMINGS")
        if not path:
            return
        import json

        parent = {**self.phases, **{k: v for k, v in self.seconds.items() if not k.startswith("worker_")},
                  **{f"writer_{k}": v for k, v in writer.timings.items()}}
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"workers": workers, "parent": parent,
                           "workers_total": {k: v for k, v in self.seconds.items() if k.startswith("worker_")},
                           "tokens": record.counts.total_tokens, "rows": record.rows}, f, indent=1)
        except OSError as e:  # the outputs are in place: a timing file that cannot be written is no failed build
            logging.getLogger("sftpack").warning(f"SFTPACK_TIMINGS {path}: cannot write it ({e.strerror or e}); the "
                                                 "build is complete")


class Progress:
    """The bar on stderr: rows written, conversations read and tokens/s; with ``--rows all`` (``rows`` None) the
    bar is the fraction of the source's conversations consumed, since the number of rows is not known ahead."""

    def __init__(self, rows: int | None, source_rows: int, row_tokens: int, stats: BuildStats, enabled: bool):
        from tqdm import tqdm

        self.stats, self.row_tokens, self.every_row = stats, row_tokens, rows is None
        total, unit = (source_rows, "conv") if self.every_row else (rows, "row")
        self.bar = tqdm(total=total, unit=unit, desc="sftpack build", file=sys.stderr, disable=not enabled,
                        dynamic_ncols=True)
        self.rows = 0
        self._start = self._shown = time.monotonic()

    def row(self) -> None:
        self.rows += 1
        if self.bar.disable:
            return
        if self.every_row:
            self.bar.update(self.stats.reached - self.bar.n)
        else:
            self.bar.update(1)
        now = time.monotonic()
        if now - self._shown >= 0.5:  # formatting on every row would cost more than the rows at 16 workers
            self._shown = now
            self._postfix(now)

    def _postfix(self, now: float) -> None:
        rate = self.rows * self.row_tokens / max(now - self._start, 1e-9)
        what = f"{self.rows:,} rows" if self.every_row else f"{self.stats.reached:,} conv"
        self.bar.set_postfix_str(f"{what}, {rate / 1e6:.2f} Mtok/s", refresh=False)

    def close(self) -> None:
        if not self.bar.disable:  # the last line shows the final counts, not those of the last refresh
            if self.every_row:
                self.bar.update(self.stats.reached - self.bar.n)
            self._postfix(time.monotonic())
        self.bar.close()
