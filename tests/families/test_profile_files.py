"""A profile or rule file of the user's is used as it reads now: parsed once while its bytes (and those of the files
it shares a tokenizer block with) stay the same, again once any of them changes, and ``get_encoder`` follows it;
sftpack's own files are read once per process."""

from __future__ import annotations

import shutil

import pytest

from helpers import REPO
from sftpack.families import profiles
from sftpack.families.encode import get_encoder
from sftpack.families.profiles import load_mask_rule, load_profile, users_own


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A profile directory of the user's: Gemma-4-31B (which shares Gemma-4-26B-A4B's tokenizer block), that
    profile, and Qwen3.5's profile and rule; reads of YAML counted."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "masks").mkdir()
    for name in ("Gemma-4-31B", "Gemma-4-26B-A4B", "Qwen3.5-122B-A10B"):
        shutil.copy(REPO / "configs" / f"{name}.yaml", tmp_path / "configs")
    shutil.copy(REPO / "masks" / "qwen3_5.yaml", tmp_path / "masks")
    reads = []
    read_yaml = profiles.read_yaml
    monkeypatch.setattr(profiles, "read_yaml", lambda path: reads.append(path.name) or read_yaml(path))
    return tmp_path, reads


def edit(path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_users_profile_is_parsed_again_only_when_a_file_it_read_changes(files):
    directory, reads = files
    path = directory / "configs" / "Gemma-4-31B.yaml"
    first = load_profile(str(path))
    assert users_own(first) and reads.count("Gemma-4-26B-A4B.yaml") == 1
    reads.clear()
    assert load_profile(str(path)) is first and reads == []  # the same bytes: not parsed again
    assert first.eos_token == "<eos>"
    edit(directory / "configs" / "Gemma-4-26B-A4B.yaml", 'eos_token: "<eos>"', 'eos_token: "<turn|>"')
    changed = load_profile(str(path))
    assert "Gemma-4-31B.yaml" in reads and changed.eos_token == "<turn|>"  # the shared block changed: parsed again
    edit(path, "build_name: ", "build_name: edited-")
    assert load_profile(str(path)).build_name.startswith("edited-")


def test_a_users_rule_and_the_encoder_follow_their_files(files, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    directory, _ = files
    path = directory / "configs" / "Qwen3.5-122B-A10B.yaml"
    rule_file = directory / "masks" / "qwen3_5.yaml"
    encoder = get_encoder(str(path))
    assert get_encoder(str(path)) is encoder and encoder.rule.path == rule_file
    rule = load_mask_rule("qwen3_5", directory / "masks")
    assert load_mask_rule("qwen3_5", directory / "masks") is rule
    edit(rule_file, "example:", "# an edit\nexample:")
    assert load_mask_rule("qwen3_5", directory / "masks") is not rule
    again = get_encoder(str(path))
    assert again is not encoder and again.rule == encoder.rule  # a new encoder, from the file as it reads
    edit(path, "build_name: ", "build_name: other-")
    assert get_encoder(str(path)) is not again


def test_sftpacks_own_profiles_are_read_once(monkeypatch):
    reads = []
    read_yaml = profiles.read_yaml
    monkeypatch.setattr(profiles, "read_yaml", lambda path: reads.append(path.name) or read_yaml(path))
    first = load_profile("Qwen3.5-122B-A10B")
    assert not users_own(first)
    reads.clear()
    assert load_profile("qwen3.5-122b-a10b") is first and load_profile("Qwen/Qwen3.5-122B-A10B") is first
    assert reads == []
