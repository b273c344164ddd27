"""A signal whose raise lands inside a finalizer (weakref / WeakSet callback, ``__del__``) is not lost: Python
would print "Exception ignored" and go on; the build must still stop at its next check."""

from __future__ import annotations

import gc
import signal
import sys
import weakref

import pytest

from sftpack.builder import interrupts


class _Dies:
    def __del__(self):
        # the handler runs at the first bytecode boundary after the signal: inside this finalizer
        signal.raise_signal(signal.SIGTERM)
        self.after = True


@pytest.fixture
def handlers():
    previous = interrupts.install()
    try:
        yield
    finally:
        interrupts.restore(previous)
        interrupts.reset()


def test_signal_raised_inside_a_finalizer_is_raised_at_the_next_check(handlers, capfd):
    doomed = _Dies()
    del doomed  # __del__ runs here; the handler's Interrupted is swallowed by the interpreter
    gc.collect()
    with pytest.raises(interrupts.Interrupted) as raised:
        interrupts.check()
    assert raised.value.exit_code == 128 + signal.SIGTERM
    assert "Exception ignored" not in capfd.readouterr().err


def test_signal_raised_inside_a_weakref_callback_is_raised_at_the_next_check(handlers, capfd):
    class Item:
        pass

    def callback(_ref):
        signal.raise_signal(signal.SIGINT)
        return None

    item = Item()
    ref = weakref.ref(item, callback)
    del item
    with pytest.raises(interrupts.Interrupted) as raised:
        interrupts.check()
    assert raised.value.exit_code == 128 + signal.SIGINT and ref() is None
    assert "Exception ignored" not in capfd.readouterr().err


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    previous = interrupts.install()  # wraps the hook in place now
    try:
        class Broken:
            def __del__(self):
                raise ValueError("not a signal")

        Broken()
        interrupts.check()  # nothing recorded: no interruption
    finally:
        interrupts.restore(previous)
    assert [type(u.exc_value) for u in seen] == [ValueError]
