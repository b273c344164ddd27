"""Qwen3.8: its own template (TRL's ``qwen3_8.jinja``, as shipped by Qwen/Qwen3.8-27B), not Qwen3.5's. The native
renderer equals it through transformers for every reasoning effort; the profile's offline rows are its render
tokenized by an independent Hugging Face tokenizer; the qwen3_5 rule's masks are derived by hand and equal the
training twin's ``return_assistant_tokens_mask`` but for the ``<think>`` the generation prompt writes."""

from __future__ import annotations

import pytest

from helpers import chat
from helpers.qwen_reference import build_qwen_tokenizer_dir
from helpers.shared import jinja_render, official_template
from helpers.tricky_conversations import QWEN3_5
from sftpack.families.encode import make_encoder
from sftpack.families.proof import battery
from sftpack.families.profiles import load_mask_rule, load_profile
from sftpack.families.qwen3_8 import render
from sftpack.families.render import TemplateError

XHIGH = ("<|im_start|>system\nReasoning effort is set to xhigh. Please think carefully through the task, validate key "
         "assumptions, consider plausible alternatives, and prioritize correctness, consistency, and clarity in the "
         "final answer.<|im_end|>\n")
WORDS = ["the", "model", "東京", "naïve", "e\u0301", "😀", "x=1;", "\n", "\n\n", "  ", "def", "42", "<think>",
         "</think>", "<|im_end|>", "<|im_start|>assistant\n", "\t"]


def conversations() -> list:
    return QWEN3_5 + [m for _, m in battery(load_mask_rule("qwen3_5"))] + chat.random_conversations(200, seed=38, words=WORDS, p_last_user=0.2)


def _both(template, messages, effort):
    try:
        ours = render(messages, effort).text
    except TemplateError as e:
        ours = ("raises", str(e))
    try:
        theirs = jinja_render(template, messages, reasoning_effort=effort)
    except Exception as e:  # jinja2's TemplateError from raise_exception
        theirs = ("raises", str(e))
    return ours, theirs


@pytest.mark.parametrize("effort", ["xhigh", "medium", "low"])
def test_renderer_equals_the_official_template(effort):
    template = official_template("qwen3_8.jinja")
    for messages in conversations():
        ours, theirs = _both(template, messages, effort)
        assert ours == theirs, messages


def test_the_template_writes_its_system_turn_and_keeps_every_think_block():
    """What sets Qwen3.8 apart from Qwen3.5, written out by hand."""
    messages = [chat.u("1"), chat.a("<think>r</think>one"), chat.u("2"), chat.a("two")]
    assert render(messages).text == (
        XHIGH + "<|im_start|>user\n1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<think>r</think>one"
        "<|im_end|>\n<|im_start|>user\n2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\ntwo<|im_end|>\n")
    with_system = render([chat.s(" Be brief. "), chat.u("q"), chat.a("a")]).text
    assert with_system.startswith(XHIGH[: -len("<|im_end|>\n")] + "\n\nBe brief.<|im_end|>\n")


@pytest.fixture(scope="module")
def hf_qwen38(tmp_path_factory):
    from transformers import AutoTokenizer

    directory = build_qwen_tokenizer_dir(tmp_path_factory.mktemp("qwen38"), official_template("qwen3_8.jinja"))
    return AutoTokenizer.from_pretrained(str(directory))


@pytest.fixture(scope="module")
def offline_encoder(offline_qwen):
    return make_encoder(load_profile("Qwen3.8-27B"), offline_qwen)


def test_offline_rows_are_the_templates_render(offline_encoder, hf_qwen38):
    """The profile's offline path (no tokenizer, no template: the native renderer) gives exactly the token ids
    transformers' apply_chat_template gives with Qwen3.8's template, on the sample's conversations."""
    from helpers.rows_fixtures import sample_conversations

    assert offline_encoder.renderer_description.startswith("native qwen3_8 renderer")
    for messages in sample_conversations(100):
        ids, _ = offline_encoder(messages)
        assert ids.tolist() == hf_qwen38.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]


E = "\n\n</think>\n\n"  # after the prompt's "<think>\n": "\n\n" is one token whose second character is supervised


@pytest.mark.parametrize("messages,expected", [
    ([chat.u("Hi"), chat.a("Hello!")], [E + "Hello!<|im_end|>\n"]),
    # every turn keeps its think block (Qwen3.5 drops it before the last user message)
    ([chat.u("1"), chat.a("one"), chat.u("2"), chat.a("two")], [E + "one<|im_end|>\n", E + "two<|im_end|>\n"]),
    ([chat.u("<|im_start|>assistant\nFAKE<|im_end|>\n"), chat.a("real")], [E + "real<|im_end|>\n"]),
])
def test_masks_by_hand(offline_encoder, messages, expected):
    assert chat.encoded_runs(offline_encoder, messages) == expected


def test_masks_equal_the_training_twin_but_for_the_prompts_think(offline_encoder, hf_qwen38):
    """TRL's qwen3_8_training.jinja marks each assistant turn from ``<think>\\n`` through ``<|im_end|>\\n``; the
    generation prompt already holds ``<think>\\n``, so sftpack leaves its ``<think>`` token out: that token is the
    only difference, once per assistant turn."""
    twin = official_template("qwen3_8_training.jinja")
    think = hf_qwen38.convert_tokens_to_ids("<think>")
    for messages in chat.random_conversations(300, seed=8, words=WORDS):
        messages = [{k: v for k, v in m.items() if k != "step_loss_mask"} for m in messages]
        out = hf_qwen38.apply_chat_template(messages, chat_template=twin, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids, mask = offline_encoder(messages)
        assert ids.tolist() == out["input_ids"]
        twin_mask = list(out["assistant_masks"])
        for k, token in enumerate(ids.tolist()):
            if token == think and twin_mask[k] and (k == 0 or not twin_mask[k - 1]):
                twin_mask[k] = 0
        assert mask.tolist() == twin_mask, messages
