"""Lazy references into registries: ``"module:attribute"`` strings imported when first used, and the lookup
that names the known entries when a name is unknown."""

from __future__ import annotations

from importlib import import_module
from typing import Callable, Union

from sftpack.base.errors import UsageError

Ref = Union[str, Callable, None]  # "package.module:attribute", the object itself, or None


class UnknownName(UsageError, LookupError):
    """A family, tokenizer format or offline tokenizer that is not in its table (exit 2 on the command line)."""


def lookup(table: dict, kind: str, name: str):
    try:
        return table[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name from a malformed profile
        raise UnknownName(f"Unknown {kind} {name!r}; known: {', '.join(sorted(table))}")


def resolve(ref: Ref):
    """``"module:attribute"`` imported, or the object itself."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(import_module(module), attribute)
