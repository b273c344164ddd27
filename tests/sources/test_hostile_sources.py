"""Hostile sources and hubs get one line and exit 2, never a hang, a traceback, a file read outside the source or a
record that believes them: a `save_to_disk` directory whose Arrow data file is a FIFO (a reader would block beyond
SIGTERM), a `dataset_dict.json` or `state.json` that is malformed or names files outside its directory, a hub that
answers a commit id that is a path, and hubs that never answer, trickle one byte a second or hang up mid-file (a
fetch has one overall deadline and prints one line, not huggingface_hub's retries)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helpers import REPO
from helpers.fake_hub import FakeHub, Repo
from helpers.hostile_hub import HostileHub
from sftpack.sources import SAMPLE_PATH

datasets = pytest.importorskip("datasets")
MODEL = "Qwen3.5-122B-A10B"
PWNED = "../../../../elsewhere/PWNED"


def sftpack(*argv, env_extra: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_ENDPOINT", "HF_HUB_OFFLINE", "SFTPACK_HUB_DEADLINE")}
    env.update(PYTHONPATH=str(REPO), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "sftpack", *map(str, argv)], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("sftpack: warning:")]
    assert len(lines) == 1 and lines[0].startswith("sftpack: error: "), result.stderr
    return lines[0]


def build(source, out, **env) -> subprocess.CompletedProcess:
    return sftpack("build", "--model", MODEL, "--source", source, "--rows", "1", "--row-tokens", "256", "--out", out,
                   "--workers", "1", "--no-progress", env_extra={"HF_HUB_OFFLINE": "1", **env})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A good `save_to_disk` directory of 20 sample conversations."""
    directory = tmp_path_factory.mktemp("saved") / "good"
    datasets.Dataset.from_list(pq.read_table(SAMPLE_PATH).slice(0, 20).to_pylist()).save_to_disk(str(directory))
    return directory


def copy_of(saved: Path, target: Path) -> Path:
    target.mkdir()
    for file in saved.iterdir():
        (target / file.name).write_bytes(file.read_bytes())
    return target


def test_a_fifo_arrow_data_file_is_refused_before_datasets_opens_it(saved, tmp_path):
    bad = copy_of(saved, tmp_path / "fifo")
    (data,) = bad.glob("*.arrow")
    data.unlink()
    os.mkfifo(data)
    started = time.monotonic()
    line = one_line(build(bad, tmp_path / "out"))
    assert time.monotonic() - started < 60
    assert line.endswith(f"--source {bad}: {data.name} is a FIFO; a data file must be a regular file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, says", [
    ('{"splits": 5}', "dataset_dict.json's `splits` is 5, not a list of split names"),
    ("null", "dataset_dict.json's `splits` is null, not a list of split names"),
    ('["../good"]', "dataset_dict.json's `splits` is null, not a list of split names"),
    ('{"splits": ["../good"]}', 'dataset_dict.json names the split "../good", which is not a directory inside it'),
    ('{"splits": [".."]}', 'dataset_dict.json names the split "..", which is not a directory inside it'),
])
def test_dataset_dict_json_is_validated_and_confined(saved, tmp_path, content, says):
    # beside a good dataset, so that a split "../good" would read it
    copy_of(saved, tmp_path / "good")
    bad = tmp_path / "dict"
    bad.mkdir()
    (bad / "dataset_dict.json").write_text(content, encoding="utf-8")
    line = one_line(build(bad, tmp_path / "out"))
    assert line.endswith(f"--source {bad}: {says}"), line


def test_state_json_naming_a_data_file_outside_the_directory_is_refused(saved, tmp_path):
    copy_of(saved, tmp_path / "good")
    bad = copy_of(saved, tmp_path / "escape")
    state = json.loads((bad / "state.json").read_text(encoding="utf-8"))
    name = state["_data_files"][0]["filename"]
    state["_data_files"][0]["filename"] = f"../good/{name}"
    (bad / "state.json").write_text(json.dumps(state), encoding="utf-8")
    line = one_line(build(bad, tmp_path / "out"))
    assert line.endswith(f'state.json names the data file "../good/{name}", which is not a file inside the '
                         "dataset's directory"), line


def test_a_hub_answering_a_path_as_its_commit_is_refused(tmp_path):
    from helpers.small_vocabs import kimi_test_files

    kimi_test_files(tmp_path / "kimi")
    with FakeHub() as hub:
        hub.repos[("dataset", "evil/data")] = Repo(commits={PWNED: {"data/train.parquet": b"x"}},
                                                   branches={"main": PWNED})
        home = tmp_path / "a" / "b" / "c" / "d" / "hf-home"
        result = sftpack("build", "--model", "Kimi-K2.6", "--tokenizer", tmp_path / "kimi", "--source", "evil/data",
                         "--rows", "1", "--out", tmp_path / "out", "--no-progress",
                         env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(home)})
    line = one_line(result)
    assert line.endswith(f'--source evil/data@main: the hub answered the commit "{PWNED}", which is not a commit id '
                         "(40 hex digits); refusing to load from it"), line
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "a" / "elsewhere").exists()
    assert not (tmp_path / "out").exists()


def kimi_profile(tmp_path: Path, commit: str | None) -> Path:
    """A copy of the Kimi-K2.6 profile for a repository on the test hub, pinned at ``commit``."""
    kimi = yaml.safe_load((REPO / "configs" / "Kimi-K2.6.yaml").read_text(encoding="utf-8"))
    profile = dict(kimi, model="Kimi-small", build_name="kimi-small-test")
    profile["hub"] = {"repo": "test-org/kimi-small", "revision": commit}
    profile["tokenizer"] = dict(kimi["tokenizer"], pins={"tiktoken.model": hashlib.sha256(b"x").hexdigest()})
    profile.pop("published", None)
    path = tmp_path / "Kimi-small.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False), encoding="utf-8")
    return path


def test_fetch_tokenizer_refuses_a_commit_that_is_a_path(tmp_path):
    with HostileHub("ok", commit=PWNED) as hub:
        result = sftpack("fetch-tokenizer", kimi_profile(tmp_path, None), tmp_path / "dir",
                         env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")})
    line = one_line(result)
    assert f'the hub answered the commit {PWNED!r}, which is not a commit id (40 hex digits)' in line, line
    assert not (tmp_path / "dir").exists() or not any((tmp_path / "dir").iterdir())


@pytest.mark.parametrize("behaviour", ["silent", "slow"])
def test_fetch_tokenizer_has_one_overall_deadline(tmp_path, behaviour):
    started = time.monotonic()
    with HostileHub(behaviour) as hub:
        result = sftpack("fetch-tokenizer", kimi_profile(tmp_path, "e" * 40), tmp_path / "dir",
                         env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home"),
                                    "SFTPACK_HUB_DEADLINE": "4"})
    assert time.monotonic() - started < 40  # the deadline, plus the interpreter's start
    line = one_line(result)
    assert line.endswith("the hub gave no complete answer within 4 s (set SFTPACK_HUB_DEADLINE=SECONDS to wait "
                         "longer)"), line


def test_a_truncated_download_is_one_line_without_the_retries(tmp_path):
    with HostileHub("truncated") as hub:
        result = sftpack("fetch-tokenizer", kimi_profile(tmp_path, "e" * 40), tmp_path / "dir",
                         env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home"),
                                    "SFTPACK_HUB_DEADLINE": "60"})
    line = one_line(result)  # one line on stderr: huggingface_hub's retry warnings are not printed
    assert "fetch-tokenizer: cannot download tiktoken.model from test-org/kimi-small@" in line, line


def test_source_hub_refuses_a_commit_that_is_a_path_or_another_revision(tmp_path):
    from helpers.small_vocabs import kimi_test_files

    kimi_test_files(tmp_path / "kimi")
    pinned = "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"  # the pinned Tulu 3 revision, written out
    for answered, says in [(PWNED, f'the hub answered the commit "{PWNED}", which is not a commit id'),
                           ("f" * 40, f"the hub answered the commit {'f' * 40} for allenai/tulu-3-sft-mixture@{pinned}")]:
        with FakeHub() as hub:
            hub.repos[("dataset", "allenai/tulu-3-sft-mixture")] = Repo(commits={answered: {"x.parquet": b"x"}},
                                                                        branches={pinned: answered})
            result = sftpack("build", "--model", "Kimi-K2.6", "--tokenizer", tmp_path / "kimi", "--source", "hub",
                             "--rows", "1", "--out", tmp_path / "out", "--no-progress",
                             env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")})
        assert says in one_line(result)
        assert not (tmp_path / "out").exists()
