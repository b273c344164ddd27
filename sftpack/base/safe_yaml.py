"""YAML from users (recipes, build records) read with limits: size, nesting depth and alias expansion are
checked while the document is composed, so that a hostile file (a "billion laughs" of nested aliases, 10,000
nested brackets, a 5,000-digit integer) is refused in one short line instead of running out of memory or
recursion.

    >>> load_text("a: [1, {b: 2}]", "x.yaml")
    {'a': [1, {'b': 2}]}
    >>> load_text("a: " + "[" * 100 + "]" * 100, "x.yaml")
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: x.yaml: refused: YAML nested deeper than 64 levels (at line 1)
"""

from __future__ import annotations

from pathlib import Path

import yaml

from sftpack.base.errors import UsageError

MAX_BYTES = 4 << 20  # recipes and build records are a few kilobytes
MAX_DEPTH = 64
MAX_ALIAS_NODES = 10_000  # nodes that aliases may add when expanded (a billion laughs adds ~10^9)
MAX_INT_DIGITS = 100


class _Refused(Exception):
    pass


class SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the limits above (subclass it to add constructors)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._alias_nodes = 0
        self._weights: dict[int, int] = {}

    def fetch_flow_collection_start(self, TokenClass):  # refused as it is scanned: the scanner is quadratic in depth
        if self.flow_level >= MAX_DEPTH:
            raise _Refused(f"YAML nested deeper than {MAX_DEPTH} levels (at line {self.line + 1})")
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent, index):
        alias = self.check_event(yaml.AliasEvent)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"YAML nested deeper than {MAX_DEPTH} levels (at line {self.peek_event().start_mark.line + 1})")
        node = super().compose_node(parent, index)
        self._depth -= 1
        if alias:
            self._alias_nodes += self._weight(node)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise _Refused(f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes")
        return node

    def _weight(self, node) -> int:
        """Nodes in ``node`` with its aliases expanded (memoized: shared nodes are counted once per use)."""
        key = id(node)
        if key not in self._weights:
            if isinstance(node, yaml.SequenceNode):
                children = node.value
            elif isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            else:
                children = []
            self._weights[key] = 1 + sum(self._weight(c) for c in children)
        return self._weights[key]

    def construct_yaml_int(self, node):
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_INT_DIGITS:
            raise _Refused(f"an integer of {digits:,} digits (line {node.start_mark.line + 1})")
        return super().construct_yaml_int(node)


SafeLoader.add_constructor("tag:yaml.org,2002:int", SafeLoader.construct_yaml_int)


class UniqueKeyLoader(SafeLoader):
    """:class:`SafeLoader` that refuses a mapping holding a key twice, which YAML resolves silently (the last one
    wins): for the files whose every key means something (profiles, loss-mask rules)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *base" may repeat what it merges, by design
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise _Refused(f"duplicate key {key!r} (line {key_node.start_mark.line + 1})")
                seen.add(key)
            except TypeError:  # an unhashable key: the constructor below refuses it
                pass
        return super().construct_mapping(node, deep)


def load_text(text: str, where: str, loader=SafeLoader):
    """The document in ``text``; :class:`UsageError` (one line, naming ``where``) when it is refused or malformed."""
    try:
        return yaml.load(text, Loader=loader)
    except _Refused as e:
        raise UsageError(f"{where}: refused: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or " ".join(str(e).split())
        raise UsageError(f"{where}: malformed YAML: {problem}{at}") from None
    except (ValueError, RecursionError) as e:  # a value the constructors cannot make
        raise UsageError(f"{where}: malformed YAML ({type(e).__name__}: {str(e)[:200]})") from None


def load_file(path: str | Path, loader=SafeLoader):
    """:func:`load_text` of a file, refusing files over :data:`MAX_BYTES` before reading them."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UsageError(f"{path}: refused: {size:,} bytes, more than a recipe or build record ({MAX_BYTES:,} at most)")
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read it ({e.strerror})") from None
    return load_text(text, str(path), loader)
