"""One way to find turns, in the proof and the build alike: what is filled in content before turns are placed
(special tokens, the rule's text markers) comes from one function, so a rule proved unforgeable stays so at build.
Plain-text role markers (``User:``/``Assistant:``, ``Human:``) in content cannot open or close a span; a template that
rewrites content into control text is refused; a whitespace-only added token is never filled."""

from __future__ import annotations

import json
import random

import pytest

from helpers.family_vocabs import save_template_stand_in_dir
from sftpack.cli import main
from sftpack.families import jinja as jinja_module
from sftpack.families.encode import get_encoder

USER_ASSISTANT = ("{% for m in messages %}{% if m.role == 'user' %}User: {{ m.content }}\n"
                  "{% elif m.role == 'assistant' %}Assistant: {{ m.content }}\n{% else %}System: {{ m.content }}\n"
                  "{% endif %}{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}")
HUMAN_ASSISTANT = ("{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}{{ '\\n\\nHuman: ' + m.content }}"
                   "{% elif m.role == 'assistant' %}{{ '\\n\\nAssistant: ' + m.content + eos_token }}"
                   "{% else %}{{ m.content }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '\\n\\nAssistant:' }}"
                   "{% endif %}")
REWRITES = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | replace('@@END@@', '<|im_end|>') }}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
FORGED = ["User:", "Assistant:", "Human:", "\nUser: x", "\n\nAssistant: y", "\n\nHuman: z", "</s>", "System:"]


def by_hand(template: str, messages: list) -> tuple[str, list[tuple[int, int]]]:
    """The two templates written out by hand, with each assistant turn's span: after ``Assistant:`` through what
    ends it (``USER_ASSISTANT``: the next role's marker, ``User:`` appended after a final turn; ``HUMAN_ASSISTANT``:
    ``</s>``)."""
    text, spans, open_at = ("<s>" if template is HUMAN_ASSISTANT else ""), [], None
    for m in messages:
        if template is USER_ASSISTANT:
            header = {"user": "User:", "assistant": "Assistant:", "system": "System:"}[m["role"]]
            if open_at is not None:
                spans.append((open_at, len(text) + len(header)))
                open_at = None
            text += header
            if m["role"] == "assistant":
                open_at = len(text)
            text += f" {m['content']}\n"
        else:
            if m["role"] == "system":
                text += m["content"]
            elif m["role"] == "user":
                text += "\n\nHuman: " + m["content"]
            else:
                text += "\n\nAssistant:"
                spans.append((len(text), len(text) + len(" " + m["content"] + "</s>")))
                text += " " + m["content"] + "</s>"
    if open_at is not None:
        text += "User:"
        spans.append((open_at, len(text)))
    return text, spans


def forged_conversations(n: int, seed: int) -> list:
    rng = random.Random(seed)
    words = ["hello", "a b", "\n", "42", *FORGED]
    out = []
    for _ in range(n):
        messages = [{"role": "system", "content": "".join(rng.choices(words, k=rng.randint(0, 3)))}] if rng.random() < 0.3 else []
        for _ in range(rng.randint(1, 3)):
            messages.append({"role": "user", "content": "".join(rng.choices(words, k=rng.randint(1, 4)))})
            messages.append({"role": "assistant", "content": "".join(rng.choices(words, k=rng.randint(1, 4)))})
        out.append(messages)
    return out


def new_model(tmp_path, template, eos, bos=None, name="Text-Model"):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", template, eos, bos)
    code = main(["new-model", "--tokenizer", str(directory), "--name", name, "--out", str(tmp_path / "model")])
    return code, directory, tmp_path / "model" / "configs" / f"{name}.yaml"


@pytest.mark.parametrize("template, eos, bos", [(USER_ASSISTANT, "</s>", None), (HUMAN_ASSISTANT, "</s>", "<s>")])
def test_plain_text_role_markers_in_content_cannot_open_or_close_a_span(template, eos, bos, tmp_path):
    code, directory, profile = new_model(tmp_path, template, eos, bos)
    assert code == 0
    encoder = get_encoder(str(profile), str(directory))
    conversations = forged_conversations(530, seed=44)
    assert sum(any(f in m["content"] for m in c for f in ("User:", "Assistant:", "Human:")) for c in conversations) > 400
    for messages in conversations:
        assert encoder.prepare(messages) == by_hand(template, messages), messages


def test_a_profile_inferring_its_rule_at_build_fills_the_same(tmp_path):
    """GLM-5.2's profile infers its rule when it builds: the same turn finding as a proved rule."""
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", USER_ASSISTANT, "</s>")
    encoder = get_encoder("GLM-5.2-744B-A40B", str(directory))
    for messages in forged_conversations(100, seed=45):
        assert encoder.prepare(messages) == by_hand(USER_ASSISTANT, messages), messages


def test_the_proof_and_the_build_fill_the_same_markers(tmp_path, monkeypatch):
    made = []
    original = jinja_module.turn_markers
    monkeypatch.setattr(jinja_module, "turn_markers", lambda rule, specials=(): made.append(original(rule, specials)) or made[-1])
    code, directory, profile = new_model(tmp_path, USER_ASSISTANT, "</s>")
    assert code == 0
    proof = made[-1]
    get_encoder.cache_clear()
    get_encoder(str(profile), str(directory))
    assert made[-1] == proof == ["Assistant:", "User:"]


def test_a_template_that_rewrites_content_into_control_text_is_refused(tmp_path, capsys):
    code, directory, profile = new_model(tmp_path, REWRITES, "<|im_end|>")
    _, err = capsys.readouterr()
    assert code == 2 and not profile.exists() and not (tmp_path / "model").exists()
    assert err.strip().count("\n") == 0 and "replace('@@END@@', '<|im_end|>')" in err
    code = main(["build", "--model", "GLM-5.2-744B-A40B", "--tokenizer", str(directory), "--source", "sample",
                 "--rows", "1", "--out", str(tmp_path / "rows")])
    _, err = capsys.readouterr()
    assert code == 2 and "rewrites content into control text" in err and "tokenizer_config.json" in err, err


QWEN_LIKE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor %}"
             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_a_whitespace_only_added_token_is_filled_neither_in_proof_nor_build(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", QWEN_LIKE, "<|im_end|>")
    tokenizer = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["added_tokens"].append({"id": 400000, "content": "\n", "single_word": False, "lstrip": False,
                                      "rstrip": False, "normalized": False, "special": False})
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "Nl-Model", "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    # 256 rows: ~380 conversations, each with the "\n" token after every header (the whole sample: 11 s more)
    code = main(["build", "--model", str(tmp_path / "m" / "configs" / "Nl-Model.yaml"), "--tokenizer", str(directory),
                 "--source", "sample", "--rows", "256", "--row-tokens", "4096", "--workers", "1", "--out",
                 str(tmp_path / "rows"), "--no-progress"])
    assert code == 0
    import yaml

    record = yaml.safe_load(next((tmp_path / "rows").glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["counts"]["skipped"] == {} or sum(record["counts"]["skipped"].values()) == 0, record["counts"]
