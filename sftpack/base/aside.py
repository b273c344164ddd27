"""A string computed in a forked process while this one goes on (:class:`Aside`): a build hashes its source file
this way during its start-up, whose tokenizer engines' constructors hold the GIL for about a second (a thread would
wait behind them) while the machine's other cores are idle."""

from __future__ import annotations

import os
import signal
from typing import Callable

from sftpack.base.signals import child_signals, signals_held


class Aside:
    """``fn()`` (a ``str``) computed in a forked child; :meth:`result` waits for it. Where no child gives one (no
    ``fork``, the child failed or was killed), :meth:`result` calls ``fn`` here: its value, or its exception, is then
    the same as without the child. Pickled, it is its result."""

    def __init__(self, fn: Callable[[], str]):
        self._fn, self._value, self._pid, self._read = fn, None, None, None
        self._owner = os.getpid()
        if not hasattr(os, "fork"):
            return
        read, write = os.pipe()
        try:
            with signals_held():  # a raising handler between the fork and the bookkeeping would leave the child unknown
                self._pid = os.fork()
                if self._pid == 0:
                    _child(fn, read, write, self._owner)
        except OSError:  # no process to spare: computed here when asked
            os.close(read)
            read = None
        os.close(write)
        self._read = read

    def result(self) -> str:
        if self._value is None:
            sent = self._collect()
            self._value = sent if sent is not None else self._fn()
        return self._value

    def _collect(self) -> str | None:
        """The child's value, or None; the child reaped (stopped first when this is interrupted)."""
        if self._read is None:
            return None
        chunks, read = [], self._read
        self._read = None
        try:
            while chunk := os.read(read, 1 << 16):
                chunks.append(chunk)
        except BaseException:
            _stop(self._pid)
            raise
        finally:
            os.close(read)
        _, status = os.waitpid(self._pid, 0)
        text = b"".join(chunks)
        return text.decode() if os.waitstatus_to_exitcode(status) == 0 and text else None

    def __reduce__(self):
        return str, (self.result(),)

    def __del__(self):
        # dropped unread (a build that failed): the child is stopped and reaped, never by a process forked since
        if self._read is not None and os.getpid() == self._owner:
            os.close(self._read)
            self._read = None
            _stop(self._pid)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:  # reaped already
        pass


def _child(fn: Callable[[], str], read: int, write: int, parent: int) -> None:
    status = 1
    try:
        os.close(read)
        child_signals(parent)
        data = fn().encode()
        while data:
            data = data[os.write(write, data):]
        status = 0
    finally:
        os._exit(status)
