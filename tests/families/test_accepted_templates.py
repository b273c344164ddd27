"""What the principle can mask is accepted: text a template writes only after a conversation's last turn (Phi-3.5's
closing eos_token) belongs to no turn; a conversation that opens with an assistant message (where a BOS or a default
system prompt belongs to no turn) is skipped and counted by the build, and the proof line says so. A proof over too
few conversations is a refusal."""

from __future__ import annotations

import json

import yaml

from helpers.family_vocabs import save_template_stand_in_dir
from sftpack.cli import main
from sftpack.families.encode import get_encoder
from sftpack.families.proof import MIN_PROVED

# the shape of Phi-3.5's template: eos_token after the last turn unless a generation prompt follows
PHI_LIKE = ("{% for m in messages %}{% if m.role == 'system' and m.content %}{{ '<|system|>\\n' + m.content + '<|end|>\\n' }}"
            "{% elif m.role == 'user' %}{{ '<|user|>\\n' + m.content + '<|end|>\\n' }}{% elif m.role == 'assistant' %}"
            "{{ '<|assistant|>\\n' + m.content + '<|end|>\\n' }}{% endif %}{% endfor %}"
            "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}")
# the shape of Llama 3's: the BOS is written inside the first message's text
LLAMA_LIKE = ("{% for m in messages %}{% set content = '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + "
              "m.content | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
              "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
              "{% endif %}")
# refuses every conversation but the inference's probes (their sentinel contents, and its worked example)
REFUSES_MOST = ("{% for m in messages %}{% if 'q7' not in m.content and 'Paris' not in m.content and 'France' not in "
                "m.content %}{{ raise_exception('not a probe') }}{% endif %}"
                "<|{{ m.role }}|>{{ m.content }}<|end|>\\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


def new_model(tmp_path, template, eos, bos=None):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", template, eos, bos)
    code = main(["new-model", "--tokenizer", str(directory), "--name", "New-Model", "--out", str(tmp_path / "m")])
    return code, directory, tmp_path / "m" / "configs" / "New-Model.yaml"


def test_text_after_the_last_turn_is_accepted_in_no_turn(tmp_path, capsys):
    code, directory, profile = new_model(tmp_path, PHI_LIKE, "<|endoftext|>")
    out = capsys.readouterr().out
    assert code == 0
    assert "ends every conversation with '<|endoftext|>' after its last turn" in out.replace("\n# ", " ")
    rule = yaml.safe_load((tmp_path / "m" / "masks" / "new_model.yaml").read_text(encoding="utf-8"))
    assert rule["example"] == {"turn": "<|assistant|>\nParis.<|end|>\n<|endoftext|>", "supervised_chars": "Paris.<|end|>\n"}
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "r"},
                {"role": "assistant", "content": "b"}]
    text, spans = get_encoder(str(profile), str(directory)).prepare(messages)
    assert text == "<|user|>\nq<|end|>\n<|assistant|>\na<|end|>\n<|user|>\nr<|end|>\n<|assistant|>\nb<|end|>\n<|endoftext|>"
    assert [text[a:b] for a, b in spans] == ["a<|end|>\n", "b<|end|>\n"]


def test_an_assistant_first_conversation_is_skipped_and_counted(tmp_path, capsys):
    code, directory, profile = new_model(tmp_path, LLAMA_LIKE, "<|eot_id|>", "<|begin_of_text|>")
    out = capsys.readouterr().out
    assert code == 0 and "not checked: 1 assistant_first" in out
    rows = [{"id": "first", "messages": [{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "yes"}]},
            {"id": "plain", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"}]}]
    source = tmp_path / "source.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["build", "--model", str(profile), "--tokenizer", str(directory), "--source", str(source), "--rows",
                 "all", "--row-tokens", "16", "--workers", "1", "--out", str(tmp_path / "rows"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    record = yaml.safe_load(next((tmp_path / "rows").glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["counts"]["skipped"] == {"assistant_first": 1}


def test_a_proof_over_too_few_conversations_is_a_refusal(tmp_path, capsys):
    code, _, profile = new_model(tmp_path, REFUSES_MOST, "<|end|>")
    err = capsys.readouterr().err
    assert code == 2 and not profile.exists()
    assert f"fewer than the {MIN_PROVED} conversations a proof needs" in err and err.count("\n") == 1


def test_turn_markers_the_tokenizer_lacks_are_refused_before_anything_is_written(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", PHI_LIKE, "<|endoftext|>")
    tokenizer = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"] if t["content"] != "<|assistant|>"]
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    code = main(["new-model", "--tokenizer", str(directory), "--name", "New-Model", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "m").exists()
    assert "marks turns with <|assistant|>, which the tokenizer has no special token for" in err and err.count("\n") == 1
