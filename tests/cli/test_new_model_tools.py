"""`sftpack new-model` probes reasoning, tool calls and tool results too: its printed rule says which message fields
the template writes and what of a tool conversation is supervised, and warns where a tool result would be."""

from __future__ import annotations

import pytest

from helpers.family_vocabs import save_template_stand_in_dir
from helpers.shared import jinja_render, official_template
from helpers.tool_conversations import template_form
from sftpack.cli import main

# fixture -> (EOS, the fields the template writes, the supervised turn that calls the tool, written out by hand from
# the template's render)
WRITES = "reasoning_content, tool_calls, tool_results, tools"
CASES = {
    "qwen3_5.jinja": ("<|im_end|>", WRITES, "I should call the tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
                                            "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>\n"),
    # keeps every answer's reasoning (the printed rule says the earlier one is supervised)
    "qwen3_8.jinja": ("<|im_end|>", WRITES, "I should call the tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
                                            "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>\n"),
    "glm4_5.jinja": ("<|endoftext|>", WRITES, "\n<think>I should call the tool.</think>\n<tool_call>get_weather\n"
                                              "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call><|observation|>"),
    # the templates the whole-message schema was asked for: they read reasoning as `thinking` / `reasoning_content`
    "lfm2_2_5.jinja": ("<|im_end|>", "developer, " + WRITES, "<think>I should call the tool.</think><|tool_call_start|>"
                                                             "[get_weather(city='Paris')]<|tool_call_end|><|im_end|>\n"),
    "nemotron3_ultra.jinja": ("<|im_end|>", "developer, " + WRITES, "I should call the tool.</think>\n<tool_call>\n"
                              "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
                              "<|im_end|>\n"),
}


@pytest.mark.parametrize("file", CASES)
def test_the_printed_rule_says_how_tool_calls_and_reasoning_are_supervised(file, tmp_path, capsys):
    eos, writes, turn = CASES[file]
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", official_template(file), eos)
    assert main(["new-model", "--tokenizer", str(directory), "--name", "New-Model", "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert f"# message fields the template writes: {writes}\n" in out
    assert "# and writes nothing of (counted as unrendered_fields): " in out and "tool_call_id" in out
    assert f"# supervised, turn 1 of a tool conversation: {turn!r}\n" in out
    assert "# tool results, the tools block, system and user text: never supervised" in out
    # an earlier answer's reasoning: supervised where the template writes it (transformers' render says whether)
    two = [{"role": "user", "content": "1"}, {"role": "assistant", "content": "one", "reasoning_content": "Earlier reasoning."},
           {"role": "user", "content": "2"}, {"role": "assistant", "content": "two", "reasoning_content": "Last reasoning."}]
    kept = "Earlier reasoning." in jinja_render(official_template(file), template_form(two))
    assert (f"# reasoning of the last answer: supervised; of an answer a later user message follows: "
            f"{'supervised' if kept else 'dropped by the template'}\n") in out


def test_a_rule_that_would_supervise_a_tool_result_is_flagged():
    """GLM's rule inferred from text conversations alone ends a turn at the next user or assistant token; on a tool
    conversation its span would run over the tool result to the next assistant turn: the description says so (the
    shipped glm4_5 rule, which new-model reuses, ends such a turn at <|observation|>)."""
    from sftpack.families.fields import describe_fields
    from sftpack.families.infer import infer_rule
    from sftpack.families.jinja import JinjaRenderer
    from sftpack.families.profiles import load_mask_rule

    template = official_template("glm4_5.jinja")
    inferred = infer_rule(template, "glmlike").rule
    assert "<|observation|>" not in inferred.end_markers
    assert any(line.startswith("WARNING: rule 'glmlike' would supervise a tool message") for line in describe_fields(JinjaRenderer(template, inferred, {})))
    shipped = describe_fields(JinjaRenderer(template, load_mask_rule("glm4_5"), {}))
    assert not any(line.startswith("WARNING") for line in shipped)


def test_a_rule_that_would_supervise_a_json_written_tool_result_is_flagged():
    """gpt-oss writes a tool result as a JSON string (its quotes escaped): the rule inferred from text conversations
    ends a turn at <|end|>, not at the <|call|> that closes a call, so its span would run over the escaped result."""
    from sftpack.families.fields import tool_span_check
    from sftpack.families.infer import infer_rule
    from sftpack.families.jinja import JinjaRenderer
    from sftpack.families.profiles import load_mask_rule

    template, clock = official_template("gpt_oss.jinja"), {"strftime_now": lambda fmt: "2025-08-05"}
    inferred = infer_rule(template, "harmonylike", clock).rule
    assert "<|call|>" not in inferred.end_markers
    assert tool_span_check(JinjaRenderer(template, inferred, clock)).startswith(
        "rule 'harmonylike' would supervise a tool message")
    assert tool_span_check(JinjaRenderer(template, load_mask_rule("gpt_oss"), clock)) == ""


def test_lfm2_5s_own_generation_markers_agree_on_tool_conversations(tmp_path, capsys):
    """LFM2.5's template carries {% generation %} itself: a profile new-model writes for it supervises exactly the
    tokens its return_assistant_tokens_mask marks, on the battery and forged tool conversations (reasoning as
    `thinking`, Python-style calls, tool results)."""
    from transformers import AutoTokenizer

    from helpers.tool_conversations import BATTERY, forged_conversations, template_form
    from sftpack.families.encode import make_encoder
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.loading import load_vocab

    directory = save_template_stand_in_dir(tmp_path / "tokenizer", official_template("lfm2_2_5.jinja"), "<|im_end|>")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "LFM", "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    profile = load_profile(str(tmp_path / "m" / "configs" / "LFM.yaml"))
    encoder = make_encoder(profile, load_vocab(profile, str(directory), allow_unpinned=True))
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    conversations = [c for _, c in BATTERY] + forged_conversations(60, seed=2)
    for conversation in conversations:
        ids, mask = encoder(conversation)
        twin = tokenizer.apply_chat_template(template_form(conversation["messages"]), tools=conversation["tools"],
                                             tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        assert (ids.tolist(), mask.tolist()) == (twin["input_ids"], twin["assistant_masks"])
    assert len(conversations) == 72
