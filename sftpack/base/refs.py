"""Lazy references into registries: ``"module:attribute"`` strings imported when first used, and the lookup
that names the known entries when a name is unknown."""

from __future__ import annotations

from importlib import import_module
from typing import Callable, Union

from sftpack.base.errors import UsageError

Ref = Union[str, Callable, None]  # "package.module:attribute", the object itself, or None


class UnknownName(UsageError, LookupError):
    """A family, tokenizer format or offline tokenizer that is not in its table (exit 2 on the command line)."""


def close_matches(name: str, known) -> list[str]:
    """The known names ``name`` most likely meant: those it begins (``Qwen3.5-122B``), then the closest by spelling
    (``bulid``), case ignored.

    >>> close_matches("Qwen3.5-122B", ["Qwen3.5-122B-A10B", "Qwen3-32B"]), close_matches("bulid", ["build", "diff"])
    (['Qwen3.5-122B-A10B'], ['build'])
    """
    import difflib

    if not isinstance(name, str) or not name:
        return []
    by_lower = {k.lower(): k for k in known}
    wanted = name.lower()
    prefixed = [by_lower[k] for k in sorted(by_lower) if k.startswith(wanted)]
    if prefixed:  # the beginning of a name: the names it begins, not others spelt alike
        return prefixed[:3]
    return [by_lower[k] for k in difflib.get_close_matches(wanted, list(by_lower), n=2, cutoff=0.6)]


def did_you_mean(name: str, known) -> str:
    """``"; did you mean X?"`` (or ``X or Y``) when ``name`` is close to known names, else ``""``."""
    matches = close_matches(name, known)
    return f"; did you mean {' or '.join(matches)}?" if matches else ""


def lookup(table: dict, kind: str, name: str):
    try:
        return table[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name from a malformed profile
        raise UnknownName(f"Unknown {kind} {name!r}; known: {', '.join(sorted(table))}{did_you_mean(name, table)}",
                          whole=True)


def resolve(ref: Ref):
    """``"module:attribute"`` imported, or the object itself."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(import_module(module), attribute)
