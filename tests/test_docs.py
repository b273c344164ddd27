"""The README's and docs/'s commands run as written, in order.

Every fenced ```bash block runs through ``bash -e -o pipefail`` and every ```python block is executed in one
namespace per file, in the order the file gives them, in a temporary working directory: the README first, then
each docs/ file in a copy of the directory the README left (its examples read the quickstart's ``out/``). The
sftpack that runs is the one this test imports (``sftpack`` on PATH is ``python -m sftpack``), offline
(``HF_HUB_OFFLINE=1``).

A block is changed only by a marker on the line(s) just before it, visible in the rendered file's source:

    <!-- not run: REASON -->        the block is shown, never run (needs the hub, a GPU, a checkpoint, minutes)
    <!-- no-op: CMD CMD (REASON) --> those commands do nothing (the quickstart's ``pip install`` and ``pytest -q``:
                                    this test runs inside the installed package's suite)
    <!-- exit N -->                 the block is expected to end with exit status N (default 0)

Any other fenced block must say what it is (text, yaml, json, toml), so that no command is skipped unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import sftpack

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
COMMAND_LANGUAGES = ("bash", "python")
OTHER_LANGUAGES = ("text", "yaml", "json", "toml")
README_MAX_LINES = 250

FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(not run|no-op|exit)\b:?\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    document: str
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    markers: dict = field(default_factory=dict)  # kind -> text

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in COMMAND_LANGUAGES and "not run" not in self.markers


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file with the markers written on the lines just above each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next((k for k in range(index + 1, len(lines)) if lines[k].startswith("```")), None)
        assert end is not None, f"{path.name}:{index + 1}: a fence that is never closed"
        markers, above = {}, index - 1
        while above >= 0 and MARKER.match(lines[above]):
            kind, text = MARKER.match(lines[above]).groups()
            markers[kind] = text
            above -= 1
        code = "\n".join(lines[index + 1:end]) + "\n"
        blocks.append(Block(path.relative_to(REPO).as_posix(), index + 1, opening.group(1), code, markers))
        index = end + 1
    return blocks


def plan_of(blocks: list[Block]) -> list[dict]:
    """What the runner executes: the blocks that run, with their no-op commands and expected exit status."""
    plan = []
    for block in blocks:
        if not block.runs:
            continue
        no_ops = block.markers.get("no-op", "").split("(")[0].split()
        plan.append({"where": block.where, "language": block.language, "code": block.code, "no_ops": no_ops,
                     "exit": int(block.markers.get("exit", "0").split()[0])})
    return plan


# Run in a fresh interpreter, so that the environment (HF_HUB_OFFLINE) holds from the first import on and the
# Python examples share nothing with this test process.
RUNNER = r'''
import json, subprocess, sys, traceback
namespace = {"__name__": "__main__"}
for step in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"=== {step['where']} ({step['language']})", flush=True)
    if step["language"] == "bash":
        prelude = "".join(f"{name}() {{ :; }}\n" for name in step["no_ops"])
        status = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", prelude + step["code"]]).returncode
    else:
        try:
            exec(compile(step["code"], step["where"], "exec"), namespace)
            status = 0
        except BaseException:
            traceback.print_exc()
            status = 1
    sys.stdout.flush()
    if status != step["exit"]:
        print(f"FAILED: {step['where']} exited {status}, expected {step['exit']}", flush=True)
        sys.exit(1)
'''


def run_document(path: Path, workdir: Path, tmp_path: Path) -> None:
    plan = plan_of(blocks_of(path))
    plan_file = tmp_path / f"{path.stem}.plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # Scripts, not symlinks: a virtual environment's python finds its packages from its own path.
    for name, command in (("sftpack", f'"{sys.executable}" -m sftpack'), ("python", f'"{sys.executable}"')):
        launcher = bin_dir / name
        launcher.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        launcher.chmod(0o755)
    package_root = str(Path(sftpack.__file__).resolve().parents[1])
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    env.pop("SFTPACK_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", RUNNER, str(plan_file)], cwd=workdir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    assert done.returncode == 0, f"{path.name}'s commands, run in order:\n{done.stdout[-6000:]}"


@pytest.fixture(scope="module")
def readme_dir(tmp_path_factory):
    """The working directory after every README command ran (its ``out/`` is what docs/ examples read)."""
    workdir = tmp_path_factory.mktemp("readme")
    run_document(README, workdir, tmp_path_factory.mktemp("readme-runner"))
    return workdir


def test_readme_commands_run_in_order(readme_dir):
    assert any(readme_dir.joinpath("out").glob("*.parquet")), "the quickstart wrote no rows into out/"


@pytest.mark.parametrize("doc", [p.name for p in DOCS])
def test_docs_commands_run_after_the_quickstart(doc, readme_dir, tmp_path):
    path = REPO / "docs" / doc
    if not plan_of(blocks_of(path)):
        return  # nothing in it runs (every block is marked or is not a command)
    workdir = tmp_path / "work"
    shutil.copytree(readme_dir, workdir, symlinks=True)
    run_document(path, workdir, tmp_path)


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_every_block_says_what_it_is_and_why_it_does_not_run(path):
    for block in blocks_of(path):
        assert block.language in COMMAND_LANGUAGES + OTHER_LANGUAGES, (
            f"{block.where}: a ``` block needs a language ({', '.join(COMMAND_LANGUAGES + OTHER_LANGUAGES)}); "
            "commands are bash or python")
        for kind, text in block.markers.items():
            assert text or kind == "exit", f"{block.where}: <!-- {kind}: ... --> needs its reason"
        if "no-op" in block.markers:
            assert "(" in block.markers["no-op"], f"{block.where}: <!-- no-op: CMD (REASON) --> needs its reason"


NOT_RUN = [block for path in (README, *DOCS) for block in blocks_of(path) if "not run" in block.markers]


@pytest.mark.parametrize("block", NOT_RUN, ids=lambda block: block.where)
def test_blocks_that_do_not_run_are_listed_with_their_reason(block):
    pytest.skip(f"{block.where}: not run: {block.markers['not run']}")


def test_readme_is_short_and_its_quickstart_is_what_ci_runs():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md is {len(lines)} lines; the rest belongs in docs/"
    quickstart = next(b for b in blocks_of(README) if b.language == "bash")
    commands = [line.split("#")[0].strip() for line in quickstart.code.splitlines()]
    assert commands[0].startswith('pip install ".[test]" && sftpack build ') and "--source sample" in commands[0]
    assert commands[1] == "pytest -q"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line for line in ci if line.strip() and not line.startswith("#")][-1].strip() == commands[1]


# Words that tell how the code came to be, not what it does.
HISTORY = re.compile(r"\bissues? #?\d|\bPR #?\d|\bsessions?\b|\bearlier (runs?|versions?)\b|\bbefore (this|that|these) "
                     r"changes?\b|\bchanged from\b", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
# A path in the repository cited in backquotes (`sftpack/rows/formats.py`, `benchmarks/results/`); one with a
# placeholder (`configs/MODEL.yaml`, `masks/*.yaml`) names a kind of file, and a hidden one (`benchmarks/.cache/`)
# is made by a run.
REPO_PATH = re.compile(r"`((?:sftpack|tests|benchmarks|tools|configs|masks|scripts|docs)/[\w./-]*)`")
PLACEHOLDER = re.compile(r"[A-Z]{3,}|\*|/\.")


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_docs_speak_of_the_product_and_link_to_what_exists(path):
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        found = HISTORY.search(line)
        assert not found, f"{path.name}:{number}: {found.group(0)!r}: the docs describe the product, not its history"
    for target, _anchor in LINK.findall(text):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{path.name}: the link {target!r} leads nowhere"
    for cited in REPO_PATH.findall(text):
        if not PLACEHOLDER.search(cited):
            assert (REPO / cited.rstrip("/.")).exists(), f"{path.name}: `{cited}` is not in the repository"
