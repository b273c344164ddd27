"""The shape of ``sftpack/``, computed from the code with ``ast``: layers that import only downwards, no import
cycle, no import of another module's private name, modules and functions a reader can hold in their head.

Layers, lowest first: a module imports only from its own package and the packages below it. Imports inside
functions count (they are dependencies all the same), and so do the ``"sftpack.module:attribute"`` references
that registries resolve when first used.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sftpack"
LAYERS = ["base", "tokenizers", "families", "sources", "rows", "builder", "checks", "trainer", "cli"]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# Functions allowed over MAX_FUNCTION_LINES while they wait to be split (none); an entry that no longer applies fails.
LONG_FUNCTIONS: set[tuple[str, str]] = set()
REFERENCE = re.compile(r"""["'](sftpack(?:\.\w+)+):\w+["']""")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
SOURCES = {name: path.read_text(encoding="utf-8") for name, path in MODULES.items()}
TREES = {name: ast.parse(text) for name, text in SOURCES.items()}


def absolute(name: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str) -> list[tuple[str, str | None, int]]:
    """``(module imported, name taken from it or None, line)`` for every sftpack import of module ``name``."""
    found = []
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == "sftpack"]
        elif isinstance(node, ast.ImportFrom):
            source = absolute(name, node)
            if source.split(".")[0] != "sftpack":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.append((submodule, None, node.lineno) if submodule in MODULES else (source, alias.name, node.lineno))
    return found


def dependencies(name: str) -> set[str]:
    """The sftpack modules ``name`` imports (an import of ``a.b.c`` also runs ``a`` and ``a.b``: not counted)."""
    return {module for module, _, _ in imports(name) if module in MODULES and module != name}


def layer(name: str) -> int | None:
    parts = name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_package_is_a_layer():
    packages = {name.split(".")[1] for name in MODULES if name.count(".") >= 1}
    top_level = {"__main__"}  # the entry point; sftpack/__init__.py is the package itself
    assert packages - top_level <= set(LAYERS), sorted(packages - top_level - set(LAYERS))


def test_no_upward_import():
    upward = []
    for name in MODULES:
        if layer(name) is None:
            continue
        targets = [(module, line) for module, _, line in imports(name)]
        text = SOURCES[name]
        targets += [(m.group(1), text.count("\n", 0, m.start()) + 1) for m in REFERENCE.finditer(text)]
        for module, line in targets:
            if layer(module) is not None and layer(module) > layer(name):
                upward.append(f"{MODULES[name].relative_to(PACKAGE)}:{line} imports {module}")
    assert not upward, "imports from a higher layer (" + " < ".join(LAYERS) + "):\n" + "\n".join(upward)


def test_no_import_cycle():
    graph = {name: dependencies(name) for name in MODULES}
    cycles, state = [], {}

    def visit(name, trail):
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                cycles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_import_of_another_modules_private_name():
    private = []
    for name in MODULES:
        bound = {}  # local name -> sftpack module, for module._private accesses
        for module, taken, line in imports(name):
            if taken is not None and taken.startswith("_") and module != name:
                private.append(f"{MODULES[name].relative_to(PACKAGE)}:{line} imports {module}.{taken}")
        for node in ast.walk(TREES[name]):
            if isinstance(node, ast.ImportFrom) and absolute(name, node).startswith("sftpack"):
                for alias in node.names:
                    if f"{absolute(name, node)}.{alias.name}" in MODULES:
                        bound[alias.asname or alias.name] = f"{absolute(name, node)}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in MODULES:
                        bound[alias.asname] = alias.name
        for node in ast.walk(TREES[name]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                private.append(f"{MODULES[name].relative_to(PACKAGE)}:{node.lineno} uses "
                               f"{bound[node.value.id]}.{node.attr}")
    assert not private, "private names of other modules:\n" + "\n".join(private)


def test_no_module_over_the_limit():
    long = {str(MODULES[name].relative_to(PACKAGE)): n for name, text in SOURCES.items()
            if (n := len(text.splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def function_lengths():
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield (str(MODULES[name].relative_to(PACKAGE)), node.name), node.end_lineno - node.lineno + 1


def test_no_function_over_the_limit():
    long = {key: n for key, n in function_lengths() if n > MAX_FUNCTION_LINES}
    assert not set(long) - LONG_FUNCTIONS, f"functions over {MAX_FUNCTION_LINES} lines: " + \
        ", ".join(f"{path}:{function} ({long[path, function]})" for path, function in sorted(set(long) - LONG_FUNCTIONS))
    stale = LONG_FUNCTIONS - set(long)
    assert not stale, f"no longer over {MAX_FUNCTION_LINES} lines (remove from LONG_FUNCTIONS): {sorted(stale)}"


@pytest.mark.parametrize("source, message", [
    ("from sftpack.cli import main\n", "imports sftpack.cli"),
    ("def f():\n    from sftpack.builder.pipeline import build\n", "imports sftpack.builder.pipeline"),
    ('RENDER = "sftpack.checks.verify:verify_rows"\n', "imports sftpack.checks.verify"),
])
def test_the_layer_check_sees_a_violation(source, message, monkeypatch):
    name = "sftpack.base.violation"
    monkeypatch.setitem(MODULES, name, PACKAGE / "base" / "violation.py")
    monkeypatch.setitem(SOURCES, name, source)
    monkeypatch.setitem(TREES, name, ast.parse(source))
    with pytest.raises(AssertionError, match=re.escape(message)):
        test_no_upward_import()


def test_the_size_checks_see_a_violation(monkeypatch):
    name, source = "sftpack.base.violation", "def f():\n" + "    x = 1\n" * MAX_MODULE_LINES
    monkeypatch.setitem(MODULES, name, PACKAGE / "base" / "violation.py")
    monkeypatch.setitem(SOURCES, name, source)
    monkeypatch.setitem(TREES, name, ast.parse(source))
    with pytest.raises(AssertionError, match="base/violation.py"):
        test_no_module_over_the_limit()
    with pytest.raises(AssertionError, match=re.escape("base/violation.py:f")):
        test_no_function_over_the_limit()


def test_the_cycle_and_private_checks_see_a_violation(monkeypatch):
    for name, source in {"sftpack.base.first": "from sftpack.base.second import _hidden\n",
                         "sftpack.base.second": "from sftpack.base import first\n_hidden = 1\n"}.items():
        monkeypatch.setitem(MODULES, name, PACKAGE / "base" / f"{name.rsplit('.', 1)[1]}.py")
        monkeypatch.setitem(SOURCES, name, source)
        monkeypatch.setitem(TREES, name, ast.parse(source))
    with pytest.raises(AssertionError, match="sftpack.base.first -> sftpack.base.second -> sftpack.base.first"):
        test_no_import_cycle()
    with pytest.raises(AssertionError, match=re.escape("imports sftpack.base.second._hidden")):
        test_no_import_of_another_modules_private_name()
