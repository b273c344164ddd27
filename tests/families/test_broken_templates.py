"""Templates and rule files a user brings are user input: a chat template that does not compile (a syntax error,
a value that is not a string) and a loss-mask rule whose header or end marker the template never writes are one
line, exit 2, naming the file; a conversation the Jinja path cannot place is a counted skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from helpers.shared import shared_file
from helpers.family_vocabs import save_stand_in_dir
from helpers.chat import encoded_runs
from helpers.outputs import built
from sftpack.families.profiles import resource_dir

offline_vocab = offline_vocab_fixture("Qwen3.5-122B-A10B")  # no hub; the custom profiles below keep that model

BROKEN = [
    ("{% if %}", "syntax"),  # Expected an expression
    ("{{ messages[0]['content'] ", "syntax"),  # unclosed
    ("{% for m in messages %}{{ m.content }}", "syntax"),  # missing endfor
    ("{% endif %}", "syntax"),
]


def _source(path: Path, n: int = 40, answer=lambda i: f"answer {i} there") -> Path:
    path.write_text("".join(json.dumps({"id": f"c{i}", "messages": [
        {"role": "user", "content": f"question {i} hello"}, {"role": "assistant", "content": answer(i)}]}) + "\n"
        for i in range(n)), encoding="utf-8")
    return path


def _build(capsys, model, tokenizer, source, out, *extra):
    argv = ["build", "--model", model, "--source", source, "--rows", 1, "--row-tokens", 64, "--out", out,
            "--workers", 1, "--no-progress", *extra]
    return cli(capsys, *argv, *(["--tokenizer", tokenizer] if tokenizer else []))


def _with_template(directory: Path, value) -> Path:
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = value
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


@pytest.fixture
def minimax_dir(tmp_path):
    shared_file("fixtures", "templates", "minimax_m2.jinja")
    return save_stand_in_dir("minimax_m2", tmp_path / "minimax")


@pytest.mark.parametrize("template", [t for t, _ in BROKEN])
@pytest.mark.parametrize("command", ["build", "encode"])
def test_template_syntax_error_is_one_line_naming_the_file(template, command, minimax_dir, tmp_path, capsys, monkeypatch):
    _with_template(minimax_dir, template)
    if command == "build":
        rc, stdout, err = _build(capsys, "MiniMax-M2", minimax_dir, _source(tmp_path / "s.jsonl"), tmp_path / "out")
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    else:
        monkeypatch.setattr("sys.stdin", __import__("io").StringIO('[{"role": "user", "content": "hi"}]'))
        rc, stdout, err = cli(capsys, "encode", "--model", "MiniMax-M2", "--tokenizer", minimax_dir)
    assert rc == 2 and stdout == ""
    one_error_line(err, str(minimax_dir / "tokenizer_config.json"), "chat_template")


def test_template_file_syntax_error_names_chat_template_jinja(minimax_dir, tmp_path, capsys):
    (minimax_dir / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }", encoding="utf-8")
    rc, stdout, err = _build(capsys, "MiniMax-M2", minimax_dir, _source(tmp_path / "s.jsonl"), tmp_path / "out")
    assert rc == 2
    one_error_line(err, str(minimax_dir / "chat_template.jinja"))


@pytest.mark.parametrize("value", [42, 1.5, True, {"template": "{{ 1 }}"}, ["{{ 1 }}"], [{"name": "default", "template": 7}],
                                   [{"name": "default"}]])
def test_template_not_a_string_is_one_line_naming_the_file(value, minimax_dir, tmp_path, capsys):
    _with_template(minimax_dir, value)
    rc, stdout, err = _build(capsys, "MiniMax-M2", minimax_dir, _source(tmp_path / "s.jsonl"), tmp_path / "out")
    assert rc == 2 and stdout == ""
    one_error_line(err, str(minimax_dir / "tokenizer_config.json"), "chat_template")


def _profile_with_rule(tmp_path: Path, base: str, rule: str, edits: dict) -> Path:
    """A profile file ``base`` with its loss_mask replaced by ``custom``: rule ``rule`` with ``edits``."""
    root = tmp_path / "profile"
    (root / "configs").mkdir(parents=True)
    (root / "masks").mkdir()
    data = yaml.safe_load((resource_dir("masks") / f"{rule}.yaml").read_text(encoding="utf-8"))
    data.pop("example", None)
    data.update(name="custom", **edits)
    (root / "masks" / "custom.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    text = (resource_dir("configs") / f"{base}.yaml").read_text(encoding="utf-8")
    text = text.replace(f"loss_mask: {rule}", "loss_mask: custom")
    profile = root / "configs" / f"{base}.yaml"
    profile.write_text(text, encoding="utf-8")
    return profile


@pytest.mark.parametrize("edits", [
    {"header": "<|im_start|>bot\n"}, {"header": "<|im_start|>assistant\n\n"}, {"end_of_turn": "<|endoftext|>"},
    {"after_end_of_turn": "\n\n"}, {"end_of_turn": ["<|endoftext|>", "<|im_start|>"]},
])
def test_native_path_rule_that_does_not_fit_the_template(edits, tmp_path, capsys):
    profile = _profile_with_rule(tmp_path, "Qwen3.5-122B-A10B", "qwen3_5", edits)
    rc, stdout, err = cli(capsys, "build", "--model", profile, "--source", "sample", "--rows", 1, "--row-tokens", 64,
                          "--out", tmp_path / "out", "--no-progress")
    assert rc == 2 and stdout == ""
    one_error_line(err, str(tmp_path / "profile" / "masks" / "custom.yaml"))


@pytest.mark.parametrize("edits", [{"header": "]~b]bot\n"}, {"end_of_turn": "]!d~["}, {"after_end_of_turn": "\n\n"}])
def test_jinja_path_rule_that_does_not_fit_the_template(edits, minimax_dir, tmp_path, capsys):
    # a template that differs from the native renderer (another default system prompt): the Jinja path
    template = (minimax_dir / "tokenizer_config.json").read_text(encoding="utf-8")
    _with_template(minimax_dir, json.loads(template)["chat_template"].replace("You are a helpful assistant.", "Be brief."))
    profile = _profile_with_rule(tmp_path, "MiniMax-M2", "minimax_m2", edits)
    rc, stdout, err = _build(capsys, profile, minimax_dir, _source(tmp_path / "s.jsonl"), tmp_path / "out")
    assert rc == 2 and stdout == ""
    one_error_line(err, str(tmp_path / "profile" / "masks" / "custom.yaml"))


@pytest.mark.parametrize("ending", ["[e~", "[e", "[", "[e~[e~", "[e~\n\n"])
def test_minimax_content_ending_in_part_of_its_end_marker_builds(ending, minimax_dir, tmp_path, capsys):
    """Through the Jinja path (a template differing from the native renderer): every conversation is packed, and
    each assistant turn is supervised through the template's own ``[e~[\\n``."""
    from sftpack import get_encoder

    config = json.loads((minimax_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    _with_template(minimax_dir, config["chat_template"].replace("You are a helpful assistant.", "Be brief."))
    source = _source(tmp_path / "s.jsonl", 60, answer=lambda i: f"answer {i} {ending}")
    rc, stdout, err = _build(capsys, "MiniMax-M2", minimax_dir, source, tmp_path / "out", "--rows", "all")
    assert rc == 0, err
    record = yaml.safe_load(built(tmp_path / "out", ".build.yaml").read_text())
    assert record["counts"]["skipped"] == {} and "Jinja" in record["renderer"]
    encoder = get_encoder("MiniMax-M2", str(minimax_dir))
    runs = encoded_runs(encoder, [{"role": "user", "content": "q"}, {"role": "assistant", "content": f"ok {ending}"}])
    assert runs == [f"ok {ending}[e~[\n"]
