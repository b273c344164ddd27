"""SIGINT / SIGTERM during a build: exit 130 / 143 with nothing written, or - once the outputs are renamed into
place - a build that counts as done.

A Python signal handler that raises runs between any two bytecodes of the main thread, also inside the
standard library's locks, fork handlers and pipes; raised there, the exception can be swallowed ("Exception
ignored in ...") or leave a lock held forever. So the handler only raises where that is harmless (start-up,
tokenizer loading, writing the temporaries); inside :func:`deferred` sections (the worker pool, the final
renames) it records the signal, and the code raises it itself at :func:`check`, at points where it can clean up.
After :func:`mark_done` (the final renames happened) a signal no longer interrupts anything: it is recorded and
reported (:func:`late_signal`).

Even outside deferred sections the raise can land inside a finalizer (a weakref or ``WeakSet`` callback, a
``__del__``), where Python reports it through ``sys.unraisablehook`` and goes on. Our hook turns such a lost
:class:`Interrupted` back into a recorded signal, raised at the next :func:`check`.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The build was interrupted by ``signum``; the command exits ``128 + signum`` (130 SIGINT, 143 SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    defer = 0  # depth of deferred() sections
    pending: int | None = None  # a signal received inside a deferred section, not raised yet
    raised = False  # an Interrupted is on its way (cleanup under way): further signals are ignored
    done = False  # the outputs are in place: signals are only recorded
    late: int | None = None  # the signal received after done


_state = _State()


def handler(signum, frame) -> None:
    if _state.done:
        _state.late = _state.late or signum
        return
    if _state.raised:
        return
    if _state.defer:
        _state.pending = _state.pending or signum
        return
    _state.raised = True
    raise Interrupted(signum)


def _recover_lost(unraisable) -> None:
    """``sys.unraisablehook``: an :class:`Interrupted` raised inside a finalizer was swallowed; record it again
    (silently) so that :func:`check` raises it. Anything else goes to the previous hook."""
    lost = unraisable.exc_value
    if not isinstance(lost, Interrupted):
        _recover_lost.previous(unraisable)
        return
    if not _state.done:
        _state.raised = False
        _state.pending = _state.pending or lost.signum
    else:
        _state.late = _state.late or lost.signum


def _hook_unraisable() -> None:
    if sys.unraisablehook is not _recover_lost:
        _recover_lost.previous = sys.unraisablehook
        sys.unraisablehook = _recover_lost


def install() -> dict:
    """Route SIGINT and SIGTERM to :func:`handler` (the command line does this first thing); the previous
    handlers, for :func:`restore`."""
    reset()
    _hook_unraisable()
    return {sig: signal.signal(sig, handler) for sig in SIGNALS}


def restore(previous: dict) -> None:
    for sig, h in previous.items():
        signal.signal(sig, h)


def reset() -> None:
    """A new build starts: nothing pending, not done."""
    _state.defer, _state.pending, _state.raised, _state.done, _state.late = 0, None, False, False, None


@contextmanager
def guarded():
    """Around a whole build: SIGINT (when Python's default handler has it) goes through :func:`handler` while the
    build runs, so that the library's callers get the same clean interruption as the command line."""
    reset()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if main and previous is signal.default_int_handler:
        _hook_unraisable()
        signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if main and previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous)


@contextmanager
def deferred():
    """A section where a signal must not raise asynchronously; it is raised at :func:`check` or on leaving."""
    _state.defer += 1
    try:
        yield
    finally:
        _state.defer -= 1
    if not _state.defer:
        check()


def check() -> None:
    """Raise the signal recorded in a deferred section, if any (call it at points where raising is safe)."""
    if _state.pending is not None and not _state.raised and not _state.done:
        _state.raised = True
        raise Interrupted(_state.pending)


def mark_done() -> None:
    """The final renames happened: from here a signal does not interrupt the build (call it while deferred)."""
    _state.done = True
    _state.late = _state.late or _state.pending
    _state.pending = None


def late_signal() -> int | None:
    """The signal that arrived after the outputs were in place, if any."""
    return _state.late
