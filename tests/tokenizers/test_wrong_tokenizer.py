"""Another model's tokenizer must not build silently: a profile without pins states the special-token ids it knows
(its EOS and turn markers) and a tokenizer that puts them elsewhere is refused in one line; where a profile states
none, the build warns and its record says the tokenizer was not checked. (A pinned profile's files are proven by
their sha256, or warned about and recorded as not matching: tests/tokenizers/test_pins.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.cli_outcomes import cli, one_error_line
from helpers.shared import shared_file
from helpers.family_vocabs import save_stand_in_dir
from helpers.outputs import built
from sftpack.families.profiles import load_profile, resource_dir


def _source(path: Path, n: int = 20) -> Path:
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"question {i}"},
                                                     {"role": "assistant", "content": f"answer {i}"}]}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def _build(capsys, tmp_path, model, tokenizer, *extra):
    return cli(capsys, "build", "--model", model, "--tokenizer", tokenizer, "--source", _source(tmp_path / "s.jsonl"),
               "--rows", 1, "--row-tokens", 32, "--out", tmp_path / "out", "--workers", 1, "--no-progress", *extra)


@pytest.mark.parametrize("model", ["Qwen3-32B", "Qwen3-30B-A3B", "Qwen3.8-27B"])
def test_nemotron_tokenizer_for_a_qwen_model_is_refused(model, tmp_path, capsys, monkeypatch):
    """Nemotron's tokenizer has <|im_start|> and <|im_end|> (as special tokens, at ids 10 and 11)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shared_file("fixtures", "templates", "nemotron3_nano.jinja")
    nemotron = save_stand_in_dir("nemotron3_nano", tmp_path / "nemotron")
    rc, stdout, err = _build(capsys, tmp_path, model, nemotron)
    assert rc == 2 and stdout == ""
    one_error_line(err, f"--tokenizer {nemotron}", "<|im_end|>", "11", f"{model}")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_qwen35_tokenizer_for_qwen3_is_refused(qwen_hf_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, stdout, err = _build(capsys, tmp_path, "Qwen3-32B", qwen_hf_dir)
    assert rc == 2 and stdout == ""
    one_error_line(err, "<|im_end|>", "248046", "151645", "Qwen3-32B")


def test_minimax_stand_in_with_another_eos_id_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shared_file("fixtures", "templates", "minimax_m2.jinja")
    directory = save_stand_in_dir("minimax_m2", tmp_path / "minimax")
    data = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    for added in data["added_tokens"]:  # swap the ids of [e~[ and ]!d~[
        added["id"] = {200020: 200021, 200021: 200020}.get(added["id"], added["id"])
    vocab = data["model"]["vocab"]
    vocab["[e~["], vocab["]!d~["] = vocab["]!d~["], vocab["[e~["]
    (directory / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    rc, stdout, err = _build(capsys, tmp_path, "MiniMax-M2", directory)
    assert rc == 2
    one_error_line(err, "[e~[", "200021", "200020")


@pytest.mark.parametrize("family,model", [("minimax_m2", "MiniMax-M2"), ("nemotron3_nano", "Nemotron-3-Nano-30B-A3B")])
def test_the_right_stand_in_builds(family, model, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shared_file("fixtures", "templates", f"{family}.jinja")
    rc, _, err = _build(capsys, tmp_path, model, save_stand_in_dir(family, tmp_path / "tok"))
    assert rc == 0, err
    assert "not checked" not in err


def test_profile_without_ids_warns_and_records(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shared_file("fixtures", "templates", "minimax_m2.jinja")
    (tmp_path / "configs").mkdir()
    profile = yaml.safe_load((resource_dir("configs") / "MiniMax-M2.yaml").read_text(encoding="utf-8"))
    profile["tokenizer"].pop("ids", None)
    path = tmp_path / "configs" / "Custom.yaml"
    path.write_text(yaml.safe_dump(profile), encoding="utf-8")
    rc, _, err = _build(capsys, tmp_path, path, save_stand_in_dir("minimax_m2", tmp_path / "tok"))
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("sftpack: warning:") and "not checked" in line]
    assert len(warnings) == 1 and "MiniMax-M2" in warnings[0]
    record = yaml.safe_load(built(tmp_path / "out", ".build.yaml").read_text(encoding="utf-8"))
    assert "not checked" in record["tokenizer"]


@pytest.mark.parametrize("model", ["Qwen3-30B-A3B", "Qwen3.8-27B", "gpt-oss-20b", "DeepSeek-V4-Flash"])
def test_profile_ids_are_the_offline_vocabularys(model):
    """The ids a profile states are the ones its offline vocabulary (an independent package) has."""
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(model)
    try:
        vocab = load_vocab(profile, hub=False)
    except Exception as e:  # gpt-oss without tiktoken's cached rank file
        pytest.skip(f"offline vocabulary unavailable here: {e}")
    assert profile.token_ids and {t: vocab.special_tokens.get(t) for t in profile.token_ids} == profile.token_ids
    assert profile.token_ids.get(profile.eos_token, vocab.eos_id) == vocab.eos_id
