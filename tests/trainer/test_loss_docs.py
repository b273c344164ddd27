"""docs/trainers.md's small model for `sftpack loss` runs as written: its Python block makes the model, its command
computes a loss near ln(vocabulary) on rows built from the sample (random weights)."""

from __future__ import annotations

import math
import re
import shlex

import pytest

from helpers import REPO
from helpers.cli_outcomes import cli, offline_vocab_fixture

offline_vocab = offline_vocab_fixture("Qwen3.5-122B-A10B")
SECTION = "### A small model to try `loss` with"


def blocks():
    text = (REPO / "docs" / "trainers.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    python = re.search(r"```python\n(.*?)```", section, re.S)[1]
    command = re.search(r"```bash\n(.*?)```", section, re.S)[1].strip()
    return python, command


def test_the_small_model_of_the_docs_gives_a_loss(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, "build", "--model", "Qwen3.5-122B-A10B", "--source", "sample", "--rows", "2", "--out",
                     "out", "--workers", "1", "--no-progress")
    assert rc == 0, err
    (tmp_path / "out" / "qwen35-tulu3-fixed8192-v1-sample-rows2.parquet").rename(
        tmp_path / "out" / "qwen35-tulu3-fixed8192-v1-sample-rows64.parquet")  # the name the docs' command reads
    python, command = blocks()
    exec(compile(python, "docs/trainers.md", "exec"), {"__name__": "__main__"})
    argv = shlex.split(command)
    assert argv[0] == "sftpack"
    rc, out, err = cli(capsys, *argv[1:], "--no-progress")
    assert rc == 0, err
    loss = float(re.search(r"^loss ([\d.]+)", out)[1])
    assert abs(loss - math.log(248_320)) < 1.0, out
