"""`sftpack fetch-tokenizer MODEL DIR`: exactly the profile's files, at its pinned revision, through
huggingface_hub's real download code, checked against the pins; and the one line that says what to fetch.

The hub is a server on 127.0.0.1 that answers as the hub does (``helpers.fake_hub``), reached through
``HF_ENDPOINT`` by a separate ``sftpack`` process, so huggingface_hub's own requests are what it answers.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO
from helpers.fake_hub import FakeHub
from helpers.small_vocabs import kimi_test_files

KIMI = yaml.safe_load((REPO / "configs" / "Kimi-K2.6.yaml").read_text(encoding="utf-8"))
KIMI_COMMIT = KIMI["hub"]["revision"]
KIMI_PINS = KIMI["tokenizer"]["pins"]


def run_sftpack(*argv, env_extra: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_ENDPOINT")}
    env.update(PYTHONPATH=str(REPO), **env_extra)
    return subprocess.run([sys.executable, "-m", "sftpack", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def small_kimi_files(tmp_path: Path) -> dict[str, bytes]:
    directory = tmp_path / "small-kimi"
    directory.mkdir()
    kimi_test_files(directory)
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def profile_pinning(tmp_path: Path, files: dict[str, bytes], commit: str) -> Path:
    """A copy of the Kimi-K2.6 profile that pins ``files`` (their sha256s, computed here) at ``commit``."""
    profile = dict(KIMI, model="Kimi-small", build_name="kimi-small-test")
    profile["hub"] = {"repo": "test-org/kimi-small", "revision": commit}
    profile["tokenizer"] = dict(KIMI["tokenizer"], pins={n: hashlib.sha256(c).hexdigest() for n, c in files.items()})
    profile.pop("published", None)
    path = tmp_path / "Kimi-small.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False), encoding="utf-8")
    return path


def test_fetch_gets_exactly_the_pinned_files_at_the_pinned_revision_and_the_build_uses_them(tmp_path):
    files = small_kimi_files(tmp_path)
    commit = "1" * 40
    profile = profile_pinning(tmp_path, files, commit)
    target = tmp_path / "tok"
    with FakeHub() as hub:
        # main points elsewhere, with other bytes: only the pinned commit's files may be fetched
        hub.add_model("test-org/kimi-small", commit, {**files, "unrelated.bin": b"x" * 10}, branch=None)
        hub.add_model("test-org/kimi-small", "2" * 40, {name: b"moved on" for name in files})
        result = run_sftpack("fetch-tokenizer", str(profile), str(target),
                             env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")})
        asked = [path for method, path in hub.requests if "/resolve/" in path]
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in target.iterdir() if p.is_file()) == sorted(files)
    for name, content in files.items():
        assert (target / name).read_bytes() == content
        assert f"{name}" in result.stdout and hashlib.sha256(content).hexdigest() in result.stdout
    assert asked and all(f"/resolve/{commit}/" in path for path in asked)  # never main
    assert not any("unrelated.bin" in path for path in asked)

    # ... and a build with --tokenizer DIR takes them, every pin matching, with the hub unreachable
    out = tmp_path / "out"
    build = run_sftpack("build", "--model", str(profile), "--tokenizer", str(target), "--source", "sample",
                        "--rows", "2", "--row-tokens", "256", "--out", str(out), "--no-progress",
                        env_extra={"HF_HUB_OFFLINE": "1"})
    assert build.returncode == 0, build.stderr
    record = yaml.safe_load(next(out.glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert set(record["pins"].values()) == {"match"}


def test_files_that_do_not_match_the_pins_are_refused_and_removed(tmp_path):
    files = small_kimi_files(tmp_path)  # not Kimi-K2.6's real files: every pin differs
    files["tokenization_kimi.py"] = b"# stand-in\n"
    files["chat_template.jinja"] = b"{{ messages }}"
    target = tmp_path / "tok"
    with FakeHub() as hub:
        hub.add_model(KIMI["hub"]["repo"], KIMI_COMMIT, files)
        result = run_sftpack("fetch-tokenizer", "Kimi-K2.6", str(target),
                             env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")})
    assert result.returncode == 1, result.stderr
    error = result.stderr.strip().splitlines()
    assert len(error) == 1 and "do not match the pins" in error[0]
    assert KIMI_PINS["tiktoken.model"] in error[0]
    assert hashlib.sha256(files["tiktoken.model"]).hexdigest() in error[0]
    assert not target.exists()  # nothing moved in, and the directory the fetch created removed


def test_a_missing_revision_or_file_is_one_line(tmp_path):
    with FakeHub() as hub:
        hub.add_model(KIMI["hub"]["repo"], "3" * 40, {"tiktoken.model": b"x"})  # not the pinned commit
        result = run_sftpack("fetch-tokenizer", "Kimi-K2.6", str(tmp_path / "tok"),
                             env_extra={"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home")})
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and KIMI_COMMIT in result.stderr


def test_offline_the_error_names_repository_revision_files_and_pins_in_one_line(tmp_path):
    result = run_sftpack("build", "--model", "Kimi-K2.6", "--source", "sample", "--rows", "64", "--out",
                         str(tmp_path), env_extra={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"moonshotai/Kimi-K2.6@{KIMI_COMMIT}" in line
    for name, digest in KIMI_PINS.items():
        assert f"{name} ({digest[:8]}" in line
    assert "sftpack fetch-tokenizer Kimi-K2.6 DIR" in line and "--tokenizer DIR" in line


def test_a_wrong_tokenizer_directory_says_what_to_fetch(tmp_path):
    result = run_sftpack("build", "--model", "Kimi-K2.6", "--tokenizer", str(tmp_path), "--source", "sample",
                         "--rows", "64", "--out", str(tmp_path / "out"), env_extra={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"moonshotai/Kimi-K2.6@{KIMI_COMMIT}" in line and "sftpack fetch-tokenizer Kimi-K2.6 DIR" in line
