"""Helpers for tests that run the command line in-process and check its outcome: exit code, one error line,
the build record. Shared by the cli tests of hostile input and defined outcomes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from helpers.outputs import built
from sftpack.builder import pipeline
from sftpack.cli import main
from sftpack.families.profiles import load_profile
from sftpack.tokenizers.loading import load_vocab

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a printable line never holds (\t allowed)


def offline_vocab_fixture(model: str):
    """A module fixture: no hub probing, and ``model``'s offline vocabulary loaded once for the in-process builds."""

    @pytest.fixture(scope="module", autouse=True)
    def offline_vocab():
        vocab = load_vocab(load_profile(model), hub=False)
        real = pipeline.load_vocab

        def cached(profile, tokenizer=None, **kwargs):
            return vocab if profile.model == model and tokenizer is None else real(profile, tokenizer, **kwargs)

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HF_HUB_OFFLINE", "1")
            mp.setattr(pipeline, "load_vocab", cached)
            yield vocab

    return offline_vocab


def cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str, *needles: str) -> str:
    """The only line of stderr besides progress and warnings: printable, "sftpack: error: ...", with ``needles``."""
    assert "Traceback" not in err, err
    lines = [l for l in err.split("\n") if l.strip() and not l.startswith(("sftpack: warning:", "sftpack build:"))]
    assert len(lines) == 1, lines
    assert lines[0].startswith("sftpack: error: "), lines
    assert not CONTROL.search(lines[0]), repr(lines[0])
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def record_of(out: Path) -> dict:
    """The build record the build in ``out`` wrote (its file name states the build's parameters)."""
    return yaml.safe_load(built(out, ".build.yaml").read_text(encoding="utf-8"))
