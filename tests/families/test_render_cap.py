"""A conversation's rendered text is capped (sftpack.families.encode.MAX_RENDERED_CHARS characters): a template that
writes more - a loop over a message, say - is stopped as it writes, and the conversation is a counted
``rendered_too_large`` skip, as is source content that long through a native renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.cli_outcomes import cli, offline_vocab_fixture
from helpers.shared import shared_file
from helpers.family_vocabs import save_stand_in_dir
from sftpack.families.encode import MAX_RENDERED_CHARS

offline_vocab = offline_vocab_fixture("Qwen3.5-122B-A10B")

# Each message starting with BIG is written 100,000 times before the official template's own text.
LOOP = ("{% for m in messages %}{% if m.content.startswith('BIG') %}{% for i in range(100000) %}{{ m.content }}"
        "{% endfor %}{% endif %}{% endfor %}")


def _rows(n: int, big: set[int], big_content: str) -> list[dict]:
    return [{"id": f"c{i}", "messages": [{"role": "user", "content": big_content if i in big else f"question {i}"},
                                         {"role": "assistant", "content": f"answer {i}"}]} for i in range(n)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _record(out: Path) -> dict:
    return yaml.safe_load(next(out.glob("*.build.yaml")).read_text(encoding="utf-8"))


def test_a_template_writing_past_the_cap_is_a_counted_skip(tmp_path, capsys):
    shared_file("fixtures", "templates", "minimax_m2.jinja")
    directory = save_stand_in_dir("minimax_m2", tmp_path / "tok")
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    # another default system prompt: the template differs from the native renderer, so it is rendered through Jinja
    config["chat_template"] = LOOP + config["chat_template"].replace("You are a helpful assistant.", "Be brief.")
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    big_content = "BIG " + "x" * (MAX_RENDERED_CHARS // 100_000)  # 100,000 copies pass the cap
    big = {3, 7, 11, 19}
    source = _write(tmp_path / "s.jsonl", _rows(24, big, big_content))
    rc, _, err = cli(capsys, "build", "--model", "MiniMax-M2", "--tokenizer", directory, "--source", source, "--rows",
                     "all", "--row-tokens", 32, "--out", tmp_path / "out", "--workers", 1, "--no-progress")
    assert rc == 0, err
    record = _record(tmp_path / "out")
    assert record["counts"]["skipped"] == {"rendered_too_large": len(big)}
    assert record["counts"]["source_rows_reached"] == 24 and "Jinja" in record["renderer"]


def test_content_past_the_cap_is_a_counted_skip_and_strict_names_the_cap(tmp_path, capsys):
    rows = _rows(12, {5}, "y" * (MAX_RENDERED_CHARS + 1))
    source = _write(tmp_path / "s.jsonl", rows)
    argv = ["build", "--model", "Qwen3.5-122B-A10B", "--source", source, "--rows", "all", "--row-tokens", 32,
            "--workers", 1, "--no-progress"]
    rc, _, err = cli(capsys, *argv, "--out", tmp_path / "out")
    assert rc == 0, err
    assert _record(tmp_path / "out")["counts"]["skipped"] == {"rendered_too_large": 1}
    rc, _, err = cli(capsys, *argv, "--out", tmp_path / "strict", "--strict")
    assert rc == 2
    assert "rendered_too_large" in err and f"{MAX_RENDERED_CHARS:,}" in err


def test_encode_conversation_raises_the_skip():
    from sftpack import encode_conversation
    from sftpack.families.conversation import Skip

    with pytest.raises(Skip) as caught:
        encode_conversation([{"role": "user", "content": "z" * (MAX_RENDERED_CHARS + 1)},
                             {"role": "assistant", "content": "ok"}], model="Qwen3.5-122B-A10B")
    assert caught.value.reason == "rendered_too_large"
