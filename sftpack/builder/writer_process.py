"""The build's rows writer in a process of its own, fed batches of rows through shared memory.

At 16 workers the build's main thread - receiving the workers' results, packing, sending tasks - is the serial
part of the build, and the parquet writer's threads (gathering, compressing and hashing row groups: about 40 s of
CPU in a 16-core ``--rows all`` build) shared the GIL with it: the loop took a quarter less with the rows dropped.
In a process of its own the writer costs the main thread one copy of each row into a shared slot and a small message
per batch, and a 16-worker build takes about 0.96 of the wall (``benchmarks/results/writer_share/``).

The parent copies a batch's tokens and masks into a free slot of a shared ring (an anonymous shared map made before
the fork) and sends the slot number with the batch's provenance (ids, piece arrays, supervised counts) down a
pipe; the writer process copies the slot out, hands the slot back, and writes the rows through the format's own
writer (:func:`sftpack.rows.formats.new_row_writer`), which hashes them and writes the file exactly as in the
build's process: the bytes do not depend on where it runs. An error there (a full disk) comes back as the same
exception, raised by the next ``write`` or by ``close``; the process ignores SIGINT/SIGTERM and dies with the
build (:func:`sftpack.base.signals.child_signals`); :meth:`WriterProcess.abort` kills it.

A build that never fills a batch writes its rows in its own process at ``close`` (no fork for a few rows), and so
does one of fewer than PROCESS_ROWS rows or of one worker, where the fork costs more than it saves (64 rows at 2
workers: 1.04 of the wall). ``SFTPACK_WRITER_PROCESS=1`` puts every build's writer that fills a batch in a process
of its own, ``=0`` none.
"""

from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import signal
import time
from typing import Callable

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.base.signals import child_signals, signals_held
from sftpack.builder.workers import picklable, widen
from sftpack.rows.model import Pieces, Row
from sftpack.rows.writer import RowSink

BATCH_BYTES = 4 << 20  # a batch's tokens and masks: 64 rows of 8,192 tokens (2.6 MB) hand over at once
SLOTS = 8  # batches the parent may be ahead of the writer process (it then waits for a slot)


class WriterDied(UsageError):
    """The writer process ended without a word (killed: out of memory, a signal); the build writes nothing."""

    def __init__(self, exitcode: int | None, why: BaseException | None = None):
        how = f"killed by {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0 else f"exit status {exitcode}"
        said = f": {type(why).__name__} {why}" if why is not None and str(why) else ""
        super().__init__(f"the rows writer process died ({how}{said}); nothing written")


PROCESS_ROWS = 1024  # a build of fewer rows keeps its writer (see above)


def separate(rows: int | None, workers: int) -> bool:
    """Whether a build of ``rows`` (None: every row) at ``workers`` writes in a process of its own:
    ``SFTPACK_WRITER_PROCESS`` (``1`` yes, ``0`` no), else when it has workers and PROCESS_ROWS rows or more."""
    forced = os.environ.get("SFTPACK_WRITER_PROCESS", "")
    if forced in ("0", "1"):
        return forced == "1"
    return workers > 1 and (rows is None or rows >= PROCESS_ROWS)


class WriterProcess:
    """A :class:`~sftpack.rows.writer.RowSink` that writes in a forked process: ``write(row)``, ``rows``,
    ``supervised``, ``close() -> (sha256, bytes)``, ``rows_sha256``, ``timings``, ``abort()``.

    ``open_sink`` makes the real sink; it is called in the writer process (or here, for a build of less than one
    batch, or without ``process``)."""

    def __init__(self, open_sink: Callable[[], RowSink], row_tokens: int, process: bool = True):
        self._open_sink = open_sink
        self._separate = process
        self.row_tokens = row_tokens
        self.batch = max(1, min(64, BATCH_BYTES // (5 * row_tokens)))
        self.rows = 0
        self.supervised = 0
        self.timings: dict = {}
        self._pending: list[Row] = []
        self._process = None
        self._sink: RowSink | None = None  # the sink when the rows were written here
        self._closed: tuple | None = None  # ((sha256, bytes), rows_sha256, timings) from the writer process
        self._waited = 0.0

    def write(self, row: Row) -> None:
        self._pending.append(row)
        self.rows += 1
        self.supervised += row.supervised
        if len(self._pending) == self.batch:
            if self._process is None and self._sink is None:
                self._start()
            self._hand_over()

    def _start(self) -> None:
        if not self._separate:
            self._sink = self._open_sink()
            return
        shape = (SLOTS, self.batch, self.row_tokens)
        self._ring = mmap.mmap(-1, SLOTS * self.batch * self.row_tokens * 5)  # shared with the fork (MAP_SHARED)
        self._tokens = np.frombuffer(self._ring, dtype=np.int32, count=int(np.prod(shape))).reshape(shape)
        self._masks = np.frombuffer(self._ring, dtype=np.uint8, offset=self._tokens.nbytes).reshape(shape)
        self._free = list(range(SLOTS))
        context = mp.get_context("fork")
        with signals_held():  # a build's handler raising inside start() would leave a process abort cannot kill
            task_r, self._send_end = context.Pipe(duplex=False)
            self._reply_end, reply_w = context.Pipe(duplex=False)
            process = context.Process(
                target=_serve, args=(self._open_sink, task_r, reply_w, self._tokens, self._masks, os.getpid(),
                                     [self._send_end, self._reply_end]), daemon=True)
            process.start()
            self._process = process
            task_r.close()
            reply_w.close()  # so that the process's death reads as end-of-file here
        widen(self._send_end)

    def _hand_over(self) -> None:
        rows, self._pending = self._pending, []
        if self._sink is not None:
            for row in rows:
                self._sink.write(row)
            return
        self._replies(block=False)
        if not self._free:
            t = time.perf_counter()
            self._replies(block=True)
            self._waited += time.perf_counter() - t
        slot = self._free.pop()
        tokens, masks = self._tokens[slot], self._masks[slot]
        for i, row in enumerate(rows):
            tokens[i] = row.tokens
            masks[i] = row.loss_mask
        pieces = [Pieces.of(row.pieces) for row in rows]
        numbers = [np.concatenate([getattr(p, f) for p in pieces]).astype(np.int64, copy=False)
                   for f in ("starts", "lengths", "offsets")]
        message = (slot, len(rows), [row.supervised for row in rows], [len(p) for p in pieces],
                   [conversation for p in pieces for conversation in p.ids], *numbers)
        try:
            self._send_end.send(message)
        except OSError:  # the process is gone: its error, if it sent one, says why
            self._replies(block=True)
            raise

    def _replies(self, block: bool) -> None:
        """Take the writer process's replies (slots handed back, an error, the closing figures); with ``block``,
        at least one. None after the closing figures: the process exits once it has sent them, and its end of the
        pipe, closed, then reads as ready."""
        while self._closed is None and (block or self._reply_end.poll()):
            block = False
            try:
                kind, value = self._reply_end.recv()
            except (EOFError, OSError) as e:
                self._process.join(timeout=5)
                raise WriterDied(self._process.exitcode, e) from None
            if kind == "free":
                self._free.append(value)
            elif kind == "error":
                raise value
            else:
                self._closed = value

    def close(self) -> tuple[str, int]:
        """Write the last rows and finish the file; its (sha256, size in bytes)."""
        if self._process is None:
            if self._sink is None:
                self._sink = self._open_sink()
            for row in self._pending:
                self._sink.write(row)
            self._pending = []
            figures = self._sink.close()
            self.timings = dict(self._sink.timings)
            return figures
        if self._pending:
            self._hand_over()
        self._send_end.send(None)
        while self._closed is None:
            self._replies(block=True)
        figures, _, timings = self._closed
        self.timings = {**timings, "handover_wait_s": self._waited}
        self._process.join()
        self._stop()
        return figures

    @property
    def rows_sha256(self) -> str:
        return self._sink.rows_sha256 if self._sink is not None else self._closed[1]

    def abort(self) -> None:
        """Stop writing after an error: the writer process is killed (its file closed with it)."""
        if self._sink is not None:
            self._sink.abort()
        if self._process is not None:
            if self._process.exitcode is None:
                self._process.kill()
            self._process.join()
            self._stop()

    def _stop(self) -> None:
        self._send_end.close()
        self._reply_end.close()
        self._process = None
        self._tokens = self._masks = self._ring = None  # the map goes with the last view of it


def _serve(open_sink, tasks, replies, tokens_ring, masks_ring, parent: int, inherited: list) -> None:
    """The writer process: batches in, rows written; an error is sent back, then batches are only taken (their
    slots handed back) until the end, so that the parent never waits on a slot; every way out sends a reply."""
    error = None
    try:
        child_signals(parent)
        for conn in inherited:
            conn.close()
        try:
            sink = open_sink()
        except BaseException as e:
            error = picklable(e)
            replies.send(("error", error))
        while True:
            message = tasks.recv()
            if message is None:
                break
            slot, n, supervised, counts, ids, starts, lengths, offsets = message
            tokens, masks = tokens_ring[slot, :n].copy(), masks_ring[slot, :n].copy()
            replies.send(("free", slot))
            if error is not None:
                continue
            try:
                _write(sink, tokens, masks, supervised, counts, ids, starts, lengths, offsets)
            except BaseException as e:
                error = picklable(e)
                replies.send(("error", error))
        if error is None:
            figures = sink.close()
            replies.send(("closed", (figures, sink.rows_sha256, dict(sink.timings))))
        else:
            replies.send(("error", error))  # the parent may be waiting for the closing figures
    except BaseException as e:
        try:
            if error is None:
                replies.send(("error", picklable(e)))
        finally:
            os._exit(1)
    os._exit(0)


def _write(sink, tokens, masks, supervised, counts, ids, starts, lengths, offsets) -> None:
    bounds = np.concatenate(([0], np.cumsum(counts))).tolist()
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        row = Row(tokens[i], masks[i], Pieces(ids[a:b], starts[a:b], lengths[a:b], offsets[a:b]))
        row.__dict__["supervised"] = supervised[i]  # counted by the packer
        sink.write(row)
