"""docs/architecture.md's table of layers is the tree: every package of ``sftpack/`` has its row, every module is
listed under its package, and nothing is listed that does not exist.

The table's contract: one row per package, ``| `builder/` | ... |`` (a sub-package such as ``builder/source/`` has a
row of its own); in the second cell each module is named in backquotes, and everything said about it is in
parentheses, where any backquoted name is free (a class, a function, a file)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "sftpack"
ROW = re.compile(r"^\|\s*`([\w/]+)/`\s*\|(.*)\|\s*$")
MODULE = re.compile(r"`([A-Za-z_]\w*)`")


def outside_parentheses(text: str) -> str:
    """``text`` without what its (nested) parentheses hold."""
    depth, kept = 0, []
    for char in text:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return "".join(kept)


def documented() -> dict[str, set[str]]:
    """Package (``builder/source``) -> the modules its row names."""
    section = DOC.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            package, cell = match.groups()
            assert package not in rows, f"docs/architecture.md: `{package}/` has two rows"
            rows[package] = set(MODULE.findall(outside_parentheses(cell)))
    return rows


def tree() -> dict[str, set[str]]:
    """Package -> its modules, for every package below ``sftpack/`` (a directory with an ``__init__.py``)."""
    packages = {}
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent != PACKAGE:
            modules = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
            packages[init.parent.relative_to(PACKAGE).as_posix()] = modules
    return packages


def test_the_outside_of_parentheses_is_what_names_modules():
    cell = " `render` (`Rendered`, `TurnWriter` (see `jinja`)), `jinja`; the package exposes (`read_rows`) "
    assert set(MODULE.findall(outside_parentheses(cell))) == {"render", "jinja"}


def test_every_package_has_its_row_and_every_row_a_package():
    table, packages = documented(), tree()
    assert table, "docs/architecture.md: no package table under ## Layers"
    missing, extra = sorted(set(packages) - set(table)), sorted(set(table) - set(packages))
    assert not missing, f"docs/architecture.md: no row for {', '.join(f'`{p}/`' for p in missing)}"
    assert not extra, f"docs/architecture.md: rows for packages that do not exist: {', '.join(extra)}"


def test_every_module_is_listed_under_its_package_and_nothing_else():
    table, packages = documented(), tree()
    problems = []
    for package in sorted(set(table) & set(packages)):
        unlisted, absent = packages[package] - table[package], table[package] - packages[package]
        if unlisted:
            problems.append(f"`{package}/` does not list {', '.join(sorted(unlisted))}")
        if absent:
            problems.append(f"`{package}/` lists {', '.join(sorted(absent))}, not in sftpack/{package}/")
    assert not problems, "docs/architecture.md's table of layers: " + "; ".join(problems)
