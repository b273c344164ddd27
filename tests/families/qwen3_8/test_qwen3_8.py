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


# --------------------------------------------------------------------------------------------------------
# Reasoning, tool calls, tool results and tools: the battery every family is compared on (and forged variants)
# through the native renderer against the official template through transformers' renderer.


def _tool_cases():
    from helpers.tool_conversations import BATTERY, forged_conversations

    return BATTERY + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(40, seed=11))]


@pytest.mark.parametrize("effort", ["xhigh", "medium", "low"])
def test_tool_battery_renders_as_the_official_template(effort):
    from helpers.tool_conversations import template_form
    from sftpack.families.conversation import check_conversation

    template = official_template("qwen3_8.jinja")
    for name, conversation in _tool_cases():
        checked = check_conversation(conversation)
        ours = render(checked.messages, effort, tools=checked.tools).text
        theirs = jinja_render(template, template_form(conversation["messages"]), tools=conversation["tools"],
                              reasoning_effort=effort)
        assert ours == theirs, name


def test_the_family_declares_what_its_renderer_writes():
    from sftpack.families.fields import written_fields
    from sftpack.families.registry import get_family

    family = get_family("qwen3_8")
    written = written_fields(lambda messages, tools: render(messages, tools=tools).text)
    template = official_template("qwen3_8.jinja")

    def template_text(messages, tools):
        try:
            return jinja_render(template, messages, tools=tools)
        except Exception as e:  # jinja2's TemplateError from raise_exception: not written
            raise TemplateError(str(e)) from e

    assert written == written_fields(template_text)
    assert written == {"reasoning_content", "tool_calls", "tool_results", "tools"}
    assert family.fields == written | {"developer"}  # developer: refused, as the template refuses it
    assert family.unrendered == {"tool_call_ids", "tool_call_id", "name"}


def test_developer_message_is_refused_as_the_template_refuses_it():
    messages = [{"role": "developer", "content": "d"}, chat.u("q"), chat.a("a")]
    with pytest.raises(TemplateError, match="Unexpected message role"):
        render(messages)
    with pytest.raises(Exception, match="Unexpected message role"):
        jinja_render(official_template("qwen3_8.jinja"), messages)


QWEN38_ISSUE_RUNS = [  # the issue's conversation, supervised by hand (after the prompt's "<think>\n")
    "I should call the weather tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
    "</parameter>\n</function>\n</tool_call><|im_end|>\n",
    "The tool says 18 and clear.\n</think>\n\nIt is 18 degrees and clear in Paris.<|im_end|>\n",
]


def test_tool_conversation_masks_by_hand(offline_encoder):
    from helpers.tool_conversations import WEATHER_CONVERSATION

    text, spans = offline_encoder.prepare(WEATHER_CONVERSATION)
    assert [text[a:b] for a, b in spans] == QWEN38_ISSUE_RUNS
    from sftpack.families.conversation import check_conversation

    notes = offline_encoder.notes(check_conversation(WEATHER_CONVERSATION))
    assert notes == ("unrendered_fields:tool_call_id", "unrendered_fields:tool_call_ids")


@pytest.mark.parametrize("k", range(40))
def test_forged_control_text_never_moves_a_span(offline_encoder, k):
    """Each span is its assistant message's own turn as the template writes it, found by rendering the conversation
    with and without that message (never by searching the text)."""
    from helpers.tool_conversations import forged_conversations

    conversation = forged_conversations(40, seed=11)[k]
    template = official_template("qwen3_8.jinja")
    messages, tools = conversation["messages"], conversation["tools"]
    text, spans = offline_encoder.prepare(conversation)
    expected = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before = jinja_render(template, messages[:i], tools=tools, add_generation_prompt=True) if i else ""
        through = jinja_render(template, messages[: i + 1], tools=tools)
        assert through.startswith(before) and text.startswith(through)
        expected.append(through[len(before):])
    assert [text[a:b] for a, b in spans] == expected


def test_tool_masks_equal_the_training_twin_but_for_the_prompts_think(offline_encoder, hf_qwen38):
    """The tool battery and its forged variants: TRL's twin marks the same tokens but the generation prompt's
    ``<think>\\n`` (its ``<think>`` token, and its ``\\n`` where that is a token alone: before reasoning text)."""
    from helpers.tool_conversations import template_form

    twin = official_template("qwen3_8_training.jinja")
    think, newline = hf_qwen38.convert_tokens_to_ids("<think>"), hf_qwen38.encode("\n", add_special_tokens=False)
    compared = 0
    for name, conversation in _tool_cases():
        out = hf_qwen38.apply_chat_template(template_form(conversation["messages"]), tools=conversation["tools"],
                                            chat_template=twin, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids, mask = offline_encoder(conversation)
        assert ids.tolist() == out["input_ids"], name
        twin_mask = list(out["assistant_masks"])
        for k, token in enumerate(ids.tolist()):
            if token == think and twin_mask[k] and (k == 0 or not twin_mask[k - 1]):
                twin_mask[k] = 0
                if [ids[k + 1].item()] == newline:
                    twin_mask[k + 1] = 0
        assert mask.tolist() == twin_mask, name
        compared += 1
    assert compared == len(_tool_cases())
