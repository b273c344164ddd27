"""Offline, from a fresh machine: every profile either builds from the bundled sample or says in one line which
repository, revision and files to fetch (and the command that fetches them). gpt-oss needs no manual step."""

from __future__ import annotations

import pytest
import yaml

from helpers import REPO
from helpers.cli_outcomes import cli, one_error_line

PROFILES = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def profile_of(model: str) -> dict:
    data = yaml.safe_load((REPO / "configs" / f"{model}.yaml").read_text(encoding="utf-8"))
    tokenizer = data["tokenizer"]
    if isinstance(tokenizer, str):  # shares another profile's tokenizer block
        tokenizer = yaml.safe_load((REPO / "configs" / f"{tokenizer}.yaml").read_text(encoding="utf-8"))["tokenizer"]
    return {**data, "tokenizer": tokenizer}


@pytest.mark.parametrize("model", PROFILES)
def test_every_profile_builds_offline_or_names_what_to_fetch(capsys, tmp_path, monkeypatch, model):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    empty = tmp_path / "empty-tiktoken-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))  # nothing cached: a fresh machine
    profile = profile_of(model)
    rc, out, err = cli(capsys, "build", "--model", model, "--source", "sample", "--rows", "1", "--row-tokens", "512",
                       "--out", tmp_path / "out", "--workers", "1", "--no-progress")
    if profile["tokenizer"].get("offline"):
        assert rc == 0, err
        assert "built 1 rows" in out
        return
    assert rc == 2
    line = one_error_line(err, profile["hub"]["repo"], f"sftpack fetch-tokenizer {model} DIR", "--tokenizer DIR")
    assert profile["hub"]["revision"] is None or profile["hub"]["revision"] in line
    for name, digest in profile["tokenizer"]["pins"].items():
        assert f"{name} ({digest[:8]}" in line
    if not profile["tokenizer"]["pins"]:
        assert "tokenizer.json" in line and "not pinned" in line
