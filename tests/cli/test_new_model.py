"""`sftpack new-model`: a profile and rule from each fixture template that build, verify and inspect; a shipped rule
is reused when it supervises the same; a template that cannot be masked is refused in one line, by new-model and by
a build that infers its rule."""

from __future__ import annotations

import json

import pytest
import yaml

from helpers.family_vocabs import save_stand_in_dir, save_template_stand_in_dir
from helpers.shared import official_template
from helpers.small_vocabs import kimi_test_files
from sftpack.cli import main

# fixture -> (EOS, BOS, family and rule new-model is expected to choose: a native family whose renderer writes the
# template's text, a shipped rule with the same supervision, else `jinja` and a new rule named after the model)
FIXTURES = {
    "qwen3_5.jinja": ("<|im_end|>", None, "qwen3_5", "qwen3_5"),
    "qwen3_5.miles_fixed.jinja": ("<|im_end|>", None, "jinja", "qwen3_5"),
    "qwen3.jinja": ("<|im_end|>", None, "qwen3", "qwen3"),
    "gemma4.jinja": ("<eos>", "<bos>", "gemma4", "gemma4"),
    "gemma4.rev2_2026-04.jinja": ("<eos>", "<bos>", "jinja", "gemma4"),
    "kimi_k26.kite1.0_renamed.jinja": ("[EOS]", None, "kimi_k25", "kimi_k25"),
    "kimi_k25.miles_fixed.jinja": ("[EOS]", None, "kimi_k25", "kimi_k25"),
    "gpt_oss.jinja": ("<|return|>", None, "gpt_oss", "gpt_oss"),
    "minimax_m2.jinja": ("[e~[", "]~!b[", "minimax_m2", "minimax_m2"),
    "nemotron3_nano.jinja": ("<|im_end|>", "<s>", "nemotron3_nano", "nemotron3_nano"),
    "nemotron3_super.jinja": ("<|im_end|>", "<s>", "nemotron3_nano", "nemotron3_nano"),
    "qwen3_8.jinja": ("<|im_end|>", None, "qwen3_8", "qwen3_5"),
    "glm4_5.jinja": ("<|endoftext|>", None, "glm4_5", "glm4_5"),
    "glm4_7_flash.jinja": ("<|endoftext|>", None, "glm4_7_flash", "glm4_7_flash"),
    "inkling.jinja": ("<|content_model_end_sampling|>", None, "jinja", "inkling"),
}
SHORTENS_HISTORY = ("{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' and not loop.last %}"
                    "{{ m.content[:200] }}{% else %}{{ m.content }}{% endif %}<|end|>\n{% endfor %}"
                    "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def stand_in(file, path):
    eos, bos, _, _ = FIXTURES[file]
    template = official_template(file)
    if file.startswith("minimax"):  # its markers are no <...> tokens: the family's own stand-in
        return save_stand_in_dir("minimax_m2", path, template)
    if file.startswith("kimi"):  # Kimi's tokenizer is tiktoken.model + tokenizer_config.json
        kimi_test_files(path)
        config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
        (path / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": template}), encoding="utf-8")
        return path
    return save_template_stand_in_dir(path, template, eos, bos)


@pytest.mark.parametrize("file", FIXTURES)
def test_new_model_writes_a_profile_and_rule_that_build_verify_and_inspect(file, tmp_path, capsys):
    directory = stand_in(file, tmp_path / "tokenizer")
    out = tmp_path / "model"
    code, stdout, err = run(["new-model", "--tokenizer", str(directory), "--name", "New-Model", "--out", str(out)], capsys)
    assert code == 0, err
    assert "example:" in stdout and "supervised_chars:" in stdout and "proved on " in stdout  # the rule, worked example
    profile = yaml.safe_load((out / "configs" / "New-Model.yaml").read_text(encoding="utf-8"))
    _, _, family, rule = FIXTURES[file]
    assert (profile["template"], profile["loss_mask"]) == (family, "new_model" if rule == "new" else rule)
    assert (out / "masks" / "new_model.yaml").exists() == (rule == "new")
    import hashlib

    assert profile["template_sha256"] == hashlib.sha256(official_template(file).encode()).hexdigest()
    rows = tmp_path / "rows"
    code, _, err = run(["build", "--model", str(out / "configs" / "New-Model.yaml"), "--tokenizer", str(directory),
                        "--source", "sample", "--rows", "4", "--row-tokens", "256", "--workers", "1", "--out", str(rows),
                        "--no-progress"], capsys)
    assert code == 0, err
    parquet, record = next(rows.glob("*.parquet")), next(rows.glob("*.build.yaml"))
    code, stdout, err = run(["verify", str(record), "--rows", str(parquet)], capsys)
    assert code == 0, stdout + err
    code, stdout, err = run(["inspect", str(parquet), "--row", "1", "--json", "--model", str(out / "configs" / "New-Model.yaml"),
                             "--tokenizer", str(directory)], capsys)
    assert code == 0, err
    assert any(s["supervised"] for s in json.loads(stdout)["segments"])


def test_a_template_that_cannot_be_masked_is_refused_in_one_line(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", SHORTENS_HISTORY, "<|end|>")
    code, out, err = run(["new-model", "--tokenizer", str(directory), "--name", "Shortens", "--out", str(tmp_path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "refused on conversation 'sample " in err and "when later messages follow, but as" in err
    assert not (tmp_path / "configs").exists()
    # the same checks run when a build infers its rule from the checkpoint's template
    code, out, err = run(["build", "--model", "GLM-5.2-744B-A40B", "--tokenizer", str(directory), "--source", "sample",
                          "--rows", "2", "--out", str(tmp_path / "rows"), "--no-progress"], capsys)
    error = [line for line in err.splitlines() if line.startswith("sftpack: error:")]  # (a warning may come first)
    assert code == 2 and out == "" and len(error) == 1 and err.endswith(error[0] + "\n")
    assert "GLM-5.2-744B-A40B: the tokenizer's chat template cannot be masked" in error[0] and "when later messages follow, but as" in error[0]


def test_a_missing_directory_is_one_line(tmp_path, capsys):
    code, out, err = run(["new-model", "--tokenizer", str(tmp_path / "nope"), "--name", "X"], capsys)
    assert code == 2 and out == "" and "no such directory" in err and err.count("\n") == 1
