"""How an error names what the user typed: the flag on the command line (``--overwrite``, ``--row-tokens``), the
argument in Python (``overwrite=True``, ``row_tokens``). The command line runs inside :func:`command_line`;
everything else is a Python caller. A command's options are declared once, as fields of a config dataclass
(:func:`option`), from which its argparse arguments are generated (:func:`add_options`).

    >>> argument("row_tokens"), argument("overwrite", True)
    ('row_tokens', 'overwrite=True')
    >>> with command_line():
    ...     argument("row_tokens"), argument("overwrite", True)
    ('--row-tokens', '--overwrite')
"""

from __future__ import annotations

import contextvars
import os
import re
from contextlib import contextmanager
from dataclasses import MISSING, field, fields

from sftpack.base.errors import UsageError

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


# ---------------------------------------------------------------------------------------------------------
# Options declared once: a dataclass field per option carries its flag, help and check; the command's argparse
# arguments are generated from the fields (``add_options``), its values read back (``options_from``), and the
# checks run for a Python caller and the command line alike (``check_options``, from ``__post_init__``).


def option(default=MISSING, *, help: str, kind=str, flag: str | None = None, check=None, metavar: str | None = None,
           choices: tuple | None = None, accepts: tuple = ()):
    """A config field that is a command-line option. ``kind`` is its type (``bool``: a switch; any other callable:
    argparse's ``type``); ``check(value, flag)`` returns the problem with a value, or None; ``flag`` defaults to
    ``--field-name``; ``choices`` are the only values allowed (argparse refuses others too); ``accepts``: more
    Python types a value may have (a dict beside a ``str`` option)."""
    meta = {"help": help, "kind": kind, "flag": flag, "check": check, "metavar": metavar, "choices": choices,
            "accepts": accepts}
    return field(default=default, metadata=meta)


def flag_of(f) -> str:
    return f.metadata["flag"] or "--" + f.name.replace("_", "-")


def named(f) -> str:
    """Field ``f`` as an error names it: its flag on the command line, its keyword in Python."""
    return argument(f.name, flag=flag_of(f))


def check_options(config) -> None:
    """Every option of the dataclass ``config``: its type, its choices, its check; UsageError with one line."""
    for f in fields(config):
        value, meta = getattr(config, f.name), f.metadata
        if isinstance(value, os.PathLike) and meta["kind"] is str:
            value = os.fspath(value)  # out=Path(...) and tokenizer=Path(...) are fine from Python
            setattr(config, f.name, value)
        if value is None and f.default is None:
            continue
        flag = named(f)
        if meta["kind"] is bool and not isinstance(value, bool):
            raise UsageError(f"{flag} must be True or False (got {value!r})")
        if meta["kind"] is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"{flag} must be an integer (got {value!r})")
        if meta["kind"] is str and not isinstance(value, (str, *meta["accepts"])):
            raise UsageError(f"{flag} must be a string (got {value!r})")
        if meta["choices"] is not None and value not in meta["choices"]:
            raise UsageError(f"{flag} {value}: choose one of {', '.join(meta['choices'])}")
        problem = meta["check"](value, flag) if meta["check"] else None
        if problem:
            raise UsageError(problem)


def add_options(parser, config_class, names=None, *, help_prefix: str = "", defaults: bool = True,
                notes: dict | None = None) -> None:
    """Add the options ``names`` (default: all) of ``config_class`` to an argparse parser. ``defaults=False``
    leaves every default None, so that the caller sees which options were given (the help then drops the
    "(default: ...)" of the config; ``notes`` says the caller's own default instead)."""
    for f in fields(config_class):
        if names is not None and f.name not in names:
            continue
        meta, flag = f.metadata, flag_of(f)
        text = meta["help"] if defaults else re.sub(r" \((default|offline)[^()]*(\([^()]*\)[^()]*)*\)", "", meta["help"])
        if notes and f.name in notes:
            text += f" ({notes[f.name]})"
        kwargs = {"dest": f.name, "help": help_prefix + text}
        if meta["kind"] is bool:
            kwargs["action"] = "store_false" if f.default else "store_true"
        else:
            kwargs["type"] = meta["kind"]
            kwargs.update({k: meta[k] for k in ("metavar", "choices") if meta[k] is not None})
            if f.default is MISSING and defaults:  # a command taking it as an override has its own default
                kwargs["required"] = True
            elif defaults and f.default is not None:
                kwargs["default"] = f.default
        parser.add_argument(flag, **kwargs)


def options_from(config_class, args, **more):
    """The ``config_class`` of parsed arguments (``more``: values that are not options)."""
    return config_class(**{f.name: getattr(args, f.name) for f in fields(config_class) if f.init}, **more)
