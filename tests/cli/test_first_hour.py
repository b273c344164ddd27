"""What a new user meets in the first hour: quiet warnings, progress totals that match the summary, errors that
name what the user typed (the flag on the command line, the argument in Python), and `--workers` explained
one way."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import sftpack
from helpers import REPO
from helpers.cli_outcomes import cli, one_error_line
from sftpack.base.errors import UsageError

MODEL, PUBLISHED = "Qwen3.5-122B-A10B", "qwen35-tulu3-fixed8192-v1"


def run(*argv, offline: bool = True, tty_progress: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_ENDPOINT")}
    env["PYTHONPATH"] = str(REPO)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    else:  # no hub at this address: the probe fails at once, as on a machine without network
        env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    return subprocess.run([sys.executable, "-m", "sftpack", *map(str, argv)], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("sftpack: warning:")]


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """Two rows files of one model (two seeds): diff loads the vocabulary for each side."""
    out = tmp_path_factory.mktemp("two")
    for seed in ("42", "7"):
        result = run("build", "--model", MODEL, "--source", "sample", "--rows", "2", "--seed", seed, "--out",
                     out / seed, "--no-progress", "--workers", "1")
        assert result.returncode == 0, result.stderr
    return [next((out / seed).glob("*.parquet")) for seed in ("42", "7")]


@pytest.mark.parametrize("offline", [True, False])
def test_the_offline_warning_is_printed_once_per_process_and_says_why(two_builds, offline):
    result = run("diff", *two_builds, offline=offline)
    assert result.returncode == 1, result.stderr
    if offline:  # HF_HUB_OFFLINE=1 says offline is meant: no notice (the summary and record name the vocabulary)
        assert warnings_in(result.stderr) == []
        return
    (warning,) = warnings_in(result.stderr)  # diff loads two vocabularies: one notice
    assert len(warning) <= 160, warning
    assert "unreachable" in warning and "HF_HUB_OFFLINE=1 hides this" in warning


def last_bar(stderr: str) -> str:
    return re.split(r"[\r\n]", stderr.strip())[-1]


def test_progress_ends_on_the_totals_the_summary_prints(tmp_path):
    result = run("build", "--model", MODEL, "--source", "sample", "--rows", "64", "--out", tmp_path / "n",
                 "--workers", "1")
    assert result.returncode == 0, result.stderr
    reached = re.search(r"packed of ([\d,]+) reached", result.stdout)[1]
    assert "64/64" in last_bar(result.stderr) and f"{reached} conv" in last_bar(result.stderr)

    result = run("build", "--model", MODEL, "--source", "sample", "--rows", "all", "--out", tmp_path / "all",
                 "--workers", "1")
    assert result.returncode == 0, result.stderr
    rows = re.search(r"built ([\d,]+) rows", result.stdout)[1]
    assert "3000/3000" in last_bar(result.stderr) and f"{rows} rows" in last_bar(result.stderr)


def test_workers_help_and_errors_say_the_same_about_zero(capsys):
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--workers", "-1")
    assert rc == 2
    one_error_line(err, "--workers", "0 (all cores)")
    rc, help_text, _ = cli(capsys, "build", "--help")
    assert rc == 0 and "0: all cores" in " ".join(help_text.split())


def test_usage_errors_are_value_errors_that_name_the_python_argument(tmp_path, monkeypatch):
    assert issubclass(UsageError, ValueError)
    with pytest.raises(ValueError, match=r"^rows must be a whole number or 'all' \(got 2\.5\)$"):
        sftpack.BuildConfig(model=MODEL, rows=2.5)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = sftpack.BuildConfig(model=MODEL, source="sample", rows=2, out=str(tmp_path), workers=1, progress=False)
    sftpack.build(config)
    with pytest.raises(UsageError) as error:
        sftpack.build(config)
    assert "overwrite=True" in str(error.value) and "--overwrite" not in str(error.value)


def test_the_command_line_names_the_flag(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ("build", "--model", MODEL, "--source", "sample", "--rows", "2", "--out", tmp_path, "--workers", "1",
            "--no-progress")
    assert cli(capsys, *argv)[0] == 0
    rc, _, err = cli(capsys, *argv)
    assert rc == 2
    line = one_error_line(err, "--overwrite")
    assert "overwrite=True" not in line
