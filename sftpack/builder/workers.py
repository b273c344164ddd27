"""The build's encoding processes: forked workers, each fed tasks through its own pipe, results handed back in
task order.

Written for stopping cleanly at any moment: no helper threads and no locks shared between processes
(``concurrent.futures.ProcessPoolExecutor`` has both, and an interrupted build could hang in them or lose the
signal), workers ignore SIGINT/SIGTERM and are stopped by the parent with SIGKILL - they hold nothing but their
own pipes - and the parent waits with a timeout, so that a signal recorded meanwhile is raised within 50 ms
(:func:`sftpack.builder.interrupts.check`). A worker that dies shows as end-of-file on its pipe: :class:`WorkerDied`.

A result crosses its pipe in one write: a fixed prefix (the sizes), a small pickled header and the raw bytes of its
arrays (pickle protocol 5, buffers out of band). The parent reads those bytes straight into the arrays it hands on,
one copy, no unpickling of megabytes; a result that fits the pipe is all there when the parent is woken, so neither
side waits on the other mid-result. A :class:`Steps` task runs its ``tokenize`` step on a thread of the worker while the
worker runs the ``prepare`` step of its next task (a tokenizer that releases the GIL then overlaps the Python work of
the next chunk), and its ``finish`` step back on the worker's own thread.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import struct
import sys
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

import numpy as np

from sftpack.base.signals import child_signals
from sftpack.builder import interrupts

POLL_SECONDS = 0.05  # how long the parent blocks on its workers before looking at recorded signals


class WorkerDied(Exception):
    def __init__(self, worker: int, exitcode: int | None):
        self.worker, self.exitcode = worker, exitcode
        if exitcode is not None and exitcode < 0:
            how = f"killed by {signal.Signals(-exitcode).name}"
        else:
            how = f"exit status {exitcode}"
        super().__init__(f"encoding worker {worker} died ({how})")


@dataclass(frozen=True)
class Steps:
    """A task in three steps, ``finish(tokenize(prepare(task)))``. A worker runs one task's ``tokenize`` on a thread
    while it runs the next task's ``prepare``, then ``finish`` itself (results still in task order). ``tokenize`` is
    meant to be one call that releases the GIL (the engines'): each time a thread takes the GIL back while the other
    runs Python, it waits up to the switch interval (5 ms), so whatever needs the GIL goes in ``prepare`` or
    ``finish``."""

    prepare: Callable
    tokenize: Callable
    finish: Callable

    def __call__(self, task):
        return self.finish(self.tokenize(self.prepare(task)))


PIPE_BYTES = 1 << 20  # results are megabytes: fewer, larger pipe writes (F_SETPIPE_SZ, Linux; best effort)


class WorkerPool:
    """``workers`` forked processes running ``fn``; they inherit the parent's memory (tokenizer, memory-mapped
    source) instead of re-loading it. Use as a context manager; :meth:`close` kills and reaps them."""

    def __init__(self, workers: int, fn: Callable):
        context = mp.get_context("fork")
        self._processes, self._tasks, self._results = [], [], []
        parent = os.getpid()
        try:
            for _ in range(workers):
                task_r, task_w = context.Pipe(duplex=False)
                result_r, result_w = context.Pipe(duplex=False)
                inherited = self._tasks + self._results  # the parent's ends of earlier workers' pipes
                process = context.Process(target=_serve, args=(fn, task_r, result_w, parent, inherited), daemon=True)
                process.start()
                task_r.close()
                result_w.close()  # so that the worker's death reads as end-of-file here
                widen(result_r)
                self._processes.append(process)
                self._tasks.append(task_w)
                self._results.append(result_r)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def imap(self, tasks: Iterable, depth: int) -> Iterator:
        """``fn(task)`` for each task, in order, at most ``depth`` tasks ahead of the consumer. An exception
        raised by ``fn`` is raised here when its result is reached."""
        tasks = iter(tasks)
        n = len(self._processes)
        queued = [deque() for _ in range(n)]  # task numbers sent to each worker, in the order sent
        done: dict[int, tuple] = {}
        sent = consumed = 0
        exhausted = False
        while True:
            while not exhausted and sent - consumed < depth:
                task = next(tasks, _END)
                if task is _END:
                    exhausted = True
                    break
                worker = min(range(n), key=lambda w: len(queued[w]))
                try:
                    self._tasks[worker].send(task)
                except OSError:  # the worker is gone (a broken pipe must not pass for a closed stdout)
                    self._processes[worker].join(timeout=5)
                    raise WorkerDied(worker, self._processes[worker].exitcode) from None
                queued[worker].append(sent)
                sent += 1
            if consumed == sent:
                return
            timeout = 0.0  # first take what is ready (a worker blocks until its result is read), then wait
            while True:
                interrupts.check()
                busy = [self._results[w] for w in range(n) if queued[w]]
                for conn in wait(busy, timeout):
                    worker = self._results.index(conn)
                    done[queued[worker].popleft()] = self._receive(worker)
                if consumed in done:
                    break
                timeout = POLL_SECONDS
            ok, value = done.pop(consumed)
            consumed += 1
            if not ok:
                raise value
            yield value

    def _receive(self, worker: int) -> tuple:
        try:
            return _receive(self._results[worker])
        except (EOFError, OSError):
            process = self._processes[worker]
            process.join(timeout=5)
            raise WorkerDied(worker, process.exitcode) from None

    def close(self) -> None:
        for process in self._processes:
            if process.exitcode is None:
                process.kill()
        for process in self._processes:
            process.join()
        for conn in self._tasks + self._results:
            conn.close()
        self._processes, self._tasks, self._results = [], [], []


_END = object()


def _serve(fn, tasks, results, parent: int, inherited: list) -> None:
    try:
        child_signals(parent)
        for conn in inherited:
            conn.close()
        if isinstance(fn, Steps):
            _serve_steps(fn, tasks, results)
        else:
            while True:
                try:
                    task = tasks.recv()
                except EOFError:
                    break
                _send(results, _run(fn, task))
    except BaseException:
        os._exit(1)
    os._exit(0)


def _run(fn, task) -> tuple:
    try:
        return (True, fn(task))
    except BaseException as e:  # handed to the parent, which raises it when it reaches this task
        return (False, picklable(e))


def _outcome(future: Future, then: Callable) -> tuple:
    try:
        return (True, then(future.result()))
    except BaseException as e:
        return (False, picklable(e))


def _serve_steps(fn: Steps, tasks, results) -> None:
    """Task k's ``tokenize`` runs on a thread while task k+1's ``prepare`` runs here, then task k's ``finish``;
    results go out in order."""
    pending: Future | None = None
    with ThreadPoolExecutor(1) as thread:
        while True:
            if pending is not None and not tasks.poll():  # no next task to overlap with: hand the result back now
                _send(results, _outcome(pending, fn.finish))
                pending = None
            try:
                task = tasks.recv()
            except EOFError:
                break
            prepared = _run(fn.prepare, task)
            previous, pending = pending, (thread.submit(fn.tokenize, prepared[1]) if prepared[0] else None)
            if previous is not None:  # its finish step runs while the thread encodes this task
                _send(results, _outcome(previous, fn.finish))
            if not prepared[0]:
                _send(results, prepared)
        if pending is not None:
            _send(results, _outcome(pending, fn.finish))


_PREFIX = struct.Struct("<QQ")  # header bytes, number of out-of-band buffers; then each buffer's size (<Q)


def _send(conn, message) -> None:
    """The message as one ``writev``: the prefix, a pickled header (the arrays' bytes left out of it), then each
    array's bytes as they are in memory. Sent piece by piece, the parent, woken by the header, waits in its read
    for the rest while the worker waits for a CPU (3.75 ms a chunk on 2 cores, against 1.0 ms in one write)."""
    buffers: list = []
    header = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    sizes = [raw.nbytes for raw in raws]
    pending = [_PREFIX.pack(len(header), len(raws)) + struct.pack(f"<{len(raws)}Q", *sizes), header,
               *(raw for raw in raws if raw.nbytes)]
    fd = conn.fileno()
    while pending:
        done = os.writev(fd, pending)
        while done:  # drop what went out, keep the rest of a partly written piece
            if done >= len(pending[0]):
                done -= len(pending.pop(0))
            else:
                pending[0], done = memoryview(pending[0])[done:], 0


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        got = os.read(fd, size - len(data))
        if not got:
            raise EOFError("worker pipe closed in the middle of a result")
        data += got
    return data


def _receive(conn):
    """What :func:`_send` sent: the arrays' bytes read straight into fresh arrays, which the message then uses. One
    ``readv`` fills the header and all the arrays as far as the pipe holds: each call gives up the GIL, and at 16
    workers the parent that makes them is the build's busiest thread."""
    fd = conn.fileno()
    header_size, count = _PREFIX.unpack(_read_exactly(fd, _PREFIX.size))
    sizes = struct.unpack(f"<{count}Q", _read_exactly(fd, 8 * count)) if count else ()
    header = bytearray(header_size)
    buffers = [np.empty(size, dtype=np.uint8) for size in sizes]
    views = [memoryview(header)] + [memoryview(buffer) for buffer in buffers if len(buffer)]
    while views:
        got = os.readv(fd, views)
        if got == 0:
            raise EOFError("worker pipe closed in the middle of a result")
        while got:  # drop what is filled, keep the rest of a partly filled one
            if got >= len(views[0]):
                got -= len(views.pop(0))
            else:
                views[0], got = views[0][got:], 0
    return pickle.loads(header, buffers=buffers)


def widen(conn) -> None:
    if sys.platform.startswith("linux"):
        import fcntl

        try:
            fcntl.fcntl(conn.fileno(), 1031, PIPE_BYTES)  # F_SETPIPE_SZ
        except OSError:
            pass


def picklable(e: BaseException) -> BaseException:
    try:
        pickle.dumps(e)
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")
