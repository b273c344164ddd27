"""Checking the YAML files sftpack ships (profiles, rules): one line naming the file, the key and what is allowed.

    >>> keys = {"name": Key(str, "a name"), "size": Key(int, "a size", default=1, choices=(1, 2))}
    >>> check({"name": "x"}, keys, "f.yaml")
    {'name': 'x', 'size': 1}
    >>> check({"nmae": "x"}, keys, "f.yaml")
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: f.yaml: unknown key 'nmae' (allowed: name, size; did you mean 'name'?)
    >>> check({"name": "x", "size": "2"}, keys, "f.yaml")
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: f.yaml: key 'size': expected an integer, got a string '2'
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sftpack.base import safe_yaml
from sftpack.base.errors import UsageError

REQUIRED = object()
_TYPE_WORDS = {str: "a string", int: "an integer", dict: "a mapping", list: "a list", bool: "true or false", float: "a number"}


@dataclass(frozen=True)
class Key:
    """One key of a checked mapping: its type(s), what it means, its default (absent: required), the allowed
    values (a tuple, or a function giving them, for tables filled at import time), nested keys for a mapping,
    the type of a mapping's values."""

    type: type | tuple
    help: str
    default: Any = REQUIRED
    choices: tuple | Callable | None = None
    nonempty: bool = False
    keys: dict | None = None
    values: type | None = None


def _describe(value) -> str:
    text = repr(value)
    return f"{_TYPE_WORDS.get(type(value), type(value).__name__)} {text if len(text) <= 60 else text[:57] + '...'}"


def _is(value, types) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool):  # YAML's true/false are not integers here
        return bool in types
    return isinstance(value, types)


def check(data, keys: dict[str, Key], path, prefix: str = "") -> dict:
    """``data`` checked against ``keys``, defaults filled in; :class:`UsageError` on the first problem."""
    where = f"key '{prefix[:-1]}'" if prefix else "the file"
    if not isinstance(data, dict):
        raise UsageError(f"{path}: {where} must be a mapping with keys {', '.join(keys)}, got {_describe(data)}")
    for name in data:
        if name not in keys:
            close = difflib.get_close_matches(str(name), list(keys), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise UsageError(f"{path}: unknown key '{prefix}{name}' (allowed: {', '.join(keys)}{hint})")
    out = {}
    for name, key in keys.items():
        dotted = prefix + name
        if name not in data:
            if key.default is REQUIRED:
                raise UsageError(f"{path}: key '{dotted}' is missing ({key.help})")
            out[name] = key.default.copy() if isinstance(key.default, dict) else key.default
            continue
        value = data[name]
        if value is None and key.default is None:
            out[name] = None
            continue
        if not _is(value, key.type):
            words = " or ".join(_TYPE_WORDS[t] for t in (key.type if isinstance(key.type, tuple) else (key.type,)))
            raise UsageError(f"{path}: key '{dotted}': expected {words}, got {_describe(value)}")
        if key.nonempty and not value:
            raise UsageError(f"{path}: key '{dotted}' is empty ({key.help})")
        choices = key.choices() if callable(key.choices) else key.choices
        if choices is not None and value not in choices:
            raise UsageError(f"{path}: key '{dotted}': unknown value {value!r} (allowed: {', '.join(map(str, choices))})")
        if isinstance(value, dict) and key.keys is not None:
            value = check(value, key.keys, path, dotted + ".")
        elif isinstance(value, dict) and key.values is not None:
            for k, v in value.items():
                if not _is(v, key.values):
                    words = " or ".join(_TYPE_WORDS[t] for t in (key.values if isinstance(key.values, tuple) else (key.values,)))
                    raise UsageError(f"{path}: key '{dotted}.{k}': expected {words}, got {_describe(v)}")
        out[name] = value
    return out


def read_yaml(path: Path):
    """A profile or rule file, parsed with the limits of :mod:`sftpack.base.safe_yaml` (``--model PATH.yaml`` can be
    any file a user is handed: a billion-laughs or 10,000-deep one is refused in one line, not expanded); a key
    given twice is refused too."""
    return safe_yaml.load_file(path, loader=safe_yaml.UniqueKeyLoader)
