"""SIGINT and SIGTERM held back while a thread or a process starts (:func:`signals_held`), and a forked child's
signals (:func:`child_signals`)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held():
    """SIGINT and SIGTERM held back while threads or processes start, and delivered on leaving: a signal handler
    that raises (a build's) inside ``Thread.start()`` leaves a thread that is neither started nor stopped, and inside
    ``Process.start()`` a process object the build's abort cannot kill. Two holds, because blocking a signal in this
    thread does not keep it from the process: another thread that has it unblocked takes it, and Python still runs
    the handler here, at once. So on the main thread (the only one Python runs handlers on) the handlers are swapped for ones that only record the signal, raised
    again on leaving; and the signals are blocked in this thread, so that the threads started here inherit the
    block and signals go to the main thread."""
    handlers, recorded = {}, []
    if threading.current_thread() is threading.main_thread():
        for signum in HELD_SIGNALS:
            if signal.getsignal(signum) is not None:  # None: a handler not set from Python, which cannot be put back
                handlers[signum] = signal.signal(signum, lambda number, frame: recorded.append(number))
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS) if hasattr(signal, "pthread_sigmask") else None
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        if previous is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a signal held pending runs the handler now
        for signum in recorded:
            signal.raise_signal(signum)


def child_signals(parent: int) -> None:
    # Ctrl-C and SIGTERM are handled by the parent, which removes temporaries and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A parent killed outright (SIGKILL) takes its children along: an orphaned worker would wait forever on its
    # pipe, holding the output lock (inherited with fork) so that every re-run is refused.
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
