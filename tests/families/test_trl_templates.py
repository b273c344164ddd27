"""Every chat template TRL ships for a family sftpack has no native renderer for: `new-model` accepts it, or refuses
it for a reason the principle supports (stated below). Where TRL ships a ``*_training.jinja`` twin (the template
with ``{% generation %}`` markers), sftpack's masks, from the twin itself, equal transformers'
``return_assistant_tokens_mask`` on 1,000 conversations per template, except the differences stated per template:
tokens the twin marks although the generation prompt already writes them (the principle never supervises them), and
the eos_token Phi-3 writes after a conversation's last turn. The tokenizers are small stand-ins carrying each
template's control tokens, the same for both sides."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from helpers import chat
from helpers.family_vocabs import save_template_stand_in_dir
from helpers.tricky_conversations import QWEN3_5
from helpers.trl_templates import trl_template_dir
from sftpack.cli import main
from sftpack.families.conversation import Skip
from sftpack.families.encode import get_encoder

pytestmark = pytest.mark.skipif(trl_template_dir() is None, reason="TRL is not installed (pip install '.[trainers]')")

PARTS_ONLY = "it reads content only as a list of parts"
# template -> (EOS, BOS or None, None: accepted | why it is refused)
NO_NATIVE = {
    "cohere": ("<|END_OF_TURN_TOKEN|>", "<BOS_TOKEN>", None), "cohere2": ("<|END_OF_TURN_TOKEN|>", "<BOS_TOKEN>", None),
    "deepseek_r1_distill": ("<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>", None),
    "deepseekv3": ("<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>", None),
    "diffusion_gemma": ("<turn|>", "<bos>", None), "gemma": ("<end_of_turn>", "<bos>", None),
    "gemma3": ("<end_of_turn>", "<bos>", None),
    "lfm2": ("<|im_end|>", "<|startoftext|>", None), "lfm2_v2": ("<|im_end|>", "<|startoftext|>", None),
    "lfm2_2_5": ("<|im_end|>", "<|startoftext|>", None), "lfm2_2_5_v2": ("<|im_end|>", "<|startoftext|>", None),
    "lfm2_2_5_vl": ("<|im_end|>", "<|startoftext|>", None),
    "llama3": ("<|eot_id|>", "<|begin_of_text|>", None), "llama3_1": ("<|eot_id|>", "<|begin_of_text|>", None),
    "llama3_2": ("<|eot_id|>", "<|begin_of_text|>", None), "muse_glimmer": ("</s>", "<s>", None),
    "phi3": ("<|endoftext|>", None, None), "phi3_5": ("<|endoftext|>", None, None),
    "qwen2_5": ("<|im_end|>", None, None), "qwen2_5_vl": ("<|im_end|>", None, None),
    "qwen3_instruct_2507": ("<|im_end|>", None, None), "qwen3_vl": ("<|im_end|>", None, None),
    # vision models' templates: message content is a list of parts; a text conversation has no text parts to write
    "idefics3": ("<end_of_utterance>", None, PARTS_ONLY), "smolvlm": ("<end_of_utterance>", None, PARTS_ONLY),
    "llava_next": ("</s>", "<s>", "'str object' has no attribute 'text'"),
}
# TRL templates of families sftpack renders natively (their profiles' tests prove them)
NATIVE = {"gemma4", "gemma4_v2", "gemma4_v3", "gemma4_v4", "gemma4_v5", "glm4moe", "gptoss", "nemotron_3_5_lightning",
          "nemotron_3_nano", "nemotron_3_super", "nemotron_3_ultra", "qwen3", "qwen3_5_nothink", "qwen3_5_think",
          "qwen3_6", "qwen3_8"}
# template -> (the twin's marked tokens sftpack leaves out, why)
PROMPT_TEXT = "the twin marks text the generation prompt writes"
DIFFERENCES = {
    "deepseekv3": ({"<｜Assistant｜>"}, PROMPT_TEXT + " (<｜Assistant｜>)"),
    "muse_glimmer": ({"<|start|>", "as", "sistant"}, PROMPT_TEXT + " (<|start|>assistant)"),
    "qwen2_5": ({"\n"}, PROMPT_TEXT + " (the \\n of <|im_start|>assistant\\n)"),
    "phi3": ({"<|endoftext|>"}, "the twin marks the eos_token written after the last turn, in no turn"),
    "phi3_5": ({"<|endoftext|>"}, "the twin marks the eos_token written after the last turn, in no turn"),
}
# twins sftpack refuses itself, and why (their originals are accepted)
TWIN_REFUSED = {"deepseek_r1_distill": "but the template writes 'r</think>6."}
CONVERSATIONS = 1000
WORDS = ["the", "model", "東京", "naïve", "😀", "x=1;", "\n", "\n\n", "  ", "def", "42", "Ответ", "\t", "User:", "<think>",
         "</think>"]


def _new_model(tmp_path, name, template):
    eos, bos, _ = NO_NATIVE[name]
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", template, eos, bos)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["new-model", "--tokenizer", str(directory), "--name", "M", "--out", str(tmp_path / "m")])
    return code, directory, out.getvalue() + err.getvalue()


def test_every_trl_template_is_listed():
    shipped = {p.stem for p in trl_template_dir().glob("*.jinja") if not p.stem.endswith("_training")}
    assert shipped == set(NO_NATIVE) | NATIVE


@pytest.mark.parametrize("name", sorted(NO_NATIVE))
def test_new_model_accepts_or_refuses_for_a_stated_reason(name, tmp_path):
    code, _, output = _new_model(tmp_path, name, (trl_template_dir() / f"{name}.jinja").read_text(encoding="utf-8"))
    why = NO_NATIVE[name][2]
    if why is None:
        assert code == 0, output
        assert "proved on " in output
    else:
        assert code == 2 and why in output and output.count("sftpack: error") == 1, output


TWINS = sorted(n for n in NO_NATIVE if NO_NATIVE[n][2] is None and (trl_template_dir() / f"{n}_training.jinja").is_file()) \
    if trl_template_dir() else []


@pytest.mark.parametrize("name", TWINS)
def test_masks_equal_the_training_twins(name, tmp_path, monkeypatch):
    import datetime

    import transformers.utils.chat_template_utils as utils
    from transformers import AutoTokenizer

    class Clock(datetime.datetime):  # transformers' clock on the day new-model pins a template that reads it
        @classmethod
        def now(cls, tz=None):
            return cls(2025, 8, 5)

    monkeypatch.setattr(utils, "datetime", Clock)

    twin = (trl_template_dir() / f"{name}_training.jinja").read_text(encoding="utf-8")
    code, directory, output = _new_model(tmp_path, name, twin)
    if name in TWIN_REFUSED:
        assert code == 2 and TWIN_REFUSED[name] in output, output
        return
    assert code == 0, output
    encoder = get_encoder(str(tmp_path / "m" / "configs" / "M.yaml"), str(directory))
    hf = AutoTokenizer.from_pretrained(str(directory))
    allowed, _ = DIFFERENCES.get(name, (set(), ""))
    pool = QWEN3_5 + chat.random_conversations(2 * CONVERSATIONS, seed=1000, words=WORDS, p_last_user=0.1)
    compared = 0
    for messages in pool:
        messages = [{k: v for k, v in m.items() if k != "step_loss_mask"} for m in messages]
        try:
            ids, mask = encoder(messages)
        except Skip as e:  # the template refuses it (Gemma: a system message)
            assert e.reason in ("template_error", "assistant_first")
            continue
        out = hf.apply_chat_template(messages, chat_template=twin, tokenize=True, return_dict=True,
                                     return_assistant_tokens_mask=True)
        assert ids.tolist() == list(out["input_ids"]), messages
        for k, (ours, theirs) in enumerate(zip(mask.tolist(), out["assistant_masks"])):
            if ours != theirs:
                assert (ours, theirs) == (0, 1) and hf.decode([int(ids[k])]) in allowed, (messages, k)
        compared += 1
        if compared == CONVERSATIONS:
            break
    assert compared == CONVERSATIONS
