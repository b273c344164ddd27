"""The build's encoding processes: forked workers, each fed tasks through its own pipe, results handed back in
task order.

Written for stopping cleanly at any moment: no helper threads and no locks shared between processes
(``concurrent.futures.ProcessPoolExecutor`` has both, and an interrupted build could hang in them or lose the
signal), workers ignore SIGINT/SIGTERM and are stopped by the parent with SIGKILL - they hold nothing but their
own pipes - and the parent waits with a timeout, so that a signal recorded meanwhile is raised within 50 ms
(:func:`sftpack.builder.interrupts.check`). A worker that dies shows as end-of-file on its pipe: :class:`WorkerDied`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import sys
from collections import deque
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

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
            return self._results[worker].recv()
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
        _ignore_signals(parent)
        for conn in inherited:
            conn.close()
        while True:
            try:
                task = tasks.recv()
            except EOFError:
                break
            try:
                message = (True, fn(task))
            except BaseException as e:  # handed to the parent, which raises it when it reaches this task
                message = (False, _picklable(e))
            results.send(message)
    except BaseException:
        os._exit(1)
    os._exit(0)


def _picklable(e: BaseException) -> BaseException:
    try:
        pickle.dumps(e)
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")


def _ignore_signals(parent: int) -> None:
    # Ctrl-C and SIGTERM are handled by the parent, which removes temporaries and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A parent killed outright (SIGKILL) takes its workers along: an orphaned worker would wait forever on its
    # pipe, holding the output lock (inherited with fork) so that every re-run is refused.
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
