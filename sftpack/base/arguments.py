"""How an error names what the user typed: the flag on the command line (``--overwrite``, ``--row-tokens``), the
argument in Python (``overwrite=True``, ``row_tokens``). The command line runs inside :func:`command_line`;
everything else is a Python caller.

    >>> argument("row_tokens"), argument("overwrite", True)
    ('row_tokens', 'overwrite=True')
    >>> with command_line():
    ...     argument("row_tokens"), argument("overwrite", True)
    ('--row-tokens', '--overwrite')
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

_COMMAND_LINE = contextvars.ContextVar("sftpack_command_line", default=False)


def on_command_line() -> bool:
    return _COMMAND_LINE.get()


@contextmanager
def command_line():
    """Errors raised inside name flags."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def argument(name: str, switch_value: bool | None = None, flag: str | None = None) -> str:
    """``name`` (a Python keyword) as the user wrote it: ``--name-with-dashes`` (or ``flag``) on the command line;
    ``name``, or ``name=True`` for a switch to set (``switch_value``), in Python."""
    if on_command_line():
        return flag or "--" + name.replace("_", "-")
    return name if switch_value is None else f"{name}={switch_value!r}"
