"""Proof before use (sftpack.families.proof): a rule is checked against the template itself on the battery."""

from __future__ import annotations

import dataclasses
import re

import pytest

from helpers.shared import official_template
from sftpack.families.fields import tool_battery
from sftpack.families.proof import ProofFailure, battery, edge_cases, prove
from sftpack.families.infer import TemplateRunner, infer_rule
from sftpack.families.profiles import load_mask_rule

TOY = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>\n{% endfor %}"
       "{% if add_generation_prompt %}<|assistant|>{% endif %}")
# A template whose earlier answers change when later turns are added: it shortens every answer but the last to
# 200 characters (to save context), so a long earlier answer would be supervised cut short.
SHORTENS_HISTORY = ("{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' and not loop.last %}"
                    "{{ m.content[:200] }}{% else %}{{ m.content }}{% endif %}<|end|>\n{% endfor %}"
                    "{% if add_generation_prompt %}<|assistant|>{% endif %}")
FIXTURES = ["qwen3_5.jinja", "qwen3.jinja", "gemma4.jinja", "gemma4.rev2_2026-04.jinja", "kimi_k26.kite1.0_renamed.jinja",
            "kimi_k25.miles_fixed.jinja", "gpt_oss.jinja", "minimax_m2.jinja", "nemotron3_nano.jinja",
            "nemotron3_super.jinja", "glm4_5.jinja", "glm4_7_flash.jinja", "inkling.jinja", "qwen3_5.miles_fixed.jinja"]
CLOCK = {"strftime_now": lambda fmt: "2025-08-05"}
# fixture -> tool conversations of the battery (of 8) its inferred rule is proved on, where not all: a rule inferred
# from text alone that would supervise a tool result (GLM's ends a turn at the next user or assistant token, not at
# <|observation|>; gpt-oss's at <|end|>, not at <|call|>) is not trusted with them, and the build skips them; rev2
# folds tool results into the model's turn, a message the Jinja path cannot place (skipped as template_error)
TOOLS_PROVED = {"glm4_5.jinja": 0, "glm4_7_flash.jinja": 0, "gpt_oss.jinja": 0, "gemma4.rev2_2026-04.jinja": 1}


def test_the_toy_template_is_proved_on_the_whole_battery():
    rule = infer_rule(TOY, "toy").rule
    report = prove(TemplateRunner(TOY), rule, battery(rule))
    # every conversation but the one that opens with an assistant message, which a build through the template skips
    assert report.conversations == len(battery(rule)) - 1 and report.skipped == {"assistant_first": 1}
    assert report.line().endswith("not checked: 1 assistant_first (skipped so by a build through the template)")
    assert report.turns > 2 * report.conversations - 10


def test_a_template_whose_earlier_answers_change_is_refused_in_one_line_naming_the_conversation():
    rule = infer_rule(SHORTENS_HISTORY, "shortens").rule  # the probes' short answers do not show it
    assert rule == dataclasses.replace(infer_rule(TOY, "shortens").rule)
    with pytest.raises(ProofFailure) as caught:
        prove(TemplateRunner(SHORTENS_HISTORY), rule, battery(rule))
    message = str(caught.value)
    assert "\n" not in message
    assert "on conversation 'sample " in message and "when later messages follow, but as" in message


@pytest.mark.parametrize("file", FIXTURES)
def test_the_inferred_rule_of_every_fixture_is_proved_forgeries_included(file):
    template = official_template(file)
    runner = TemplateRunner(template, {"bos_token": "<bos>", **CLOCK})
    rule = infer_rule(template, "x", runner.variables).rule
    conversations = battery(rule, sample=16)
    report = prove(runner, rule, conversations)
    forged = [name for name, _ in conversations if name.startswith("forged")]
    assert len(forged) > 25
    assert report.tool_conversations == TOOLS_PROVED.get(file, 8)
    # the template refuses a few (no user message, two answers under one header): the build skips the same ones
    assert sum(report.skipped.values()) - (8 - report.tool_conversations) <= 3, report.skipped


def _break(rule, **change):
    return dataclasses.replace(rule, **change)


@pytest.mark.parametrize("change, reason", [
    ({"after_end_of_turn": ""}, "but the template writes"),  # the \n after <|im_end|> would be in no turn
    ({"skip_after_header": ""}, "but the generation prompt ends at"),  # supervises the prompt's <think>\n
])
def test_a_rule_that_does_not_follow_the_template_is_refused(change, reason):
    template = official_template("qwen3_5.jinja")
    rule = _break(load_mask_rule("qwen3_5"), **change)
    with pytest.raises(ProofFailure, match=reason):
        prove(TemplateRunner(template), rule, edge_cases())


def test_the_shipped_nemotron_rule_skips_all_the_prompt_holds_on_reasoning_turns():
    # A plain turn is written <think></think>answer, one that brings its own reasoning <think>\n...: the generation
    # prompt (<think>\n) holds <think> of the first and <think>\n of the second, and the rule skips exactly that.
    template = official_template("nemotron3_nano.jinja")
    shipped = load_mask_rule("nemotron3_nano")
    prove(TemplateRunner(template), shipped, edge_cases())
    assert infer_rule(template, "nemotron").rule.skip_after_header == shipped.skip_after_header == ("<think>\n", "<think>")
    with pytest.raises(ProofFailure, match="conversation 'reasoning last'.*generation prompt ends at"):
        prove(TemplateRunner(template), _break(shipped, skip_after_header="<think>"), edge_cases())


# --------------------------------------------------------------------------------------------------------
# Tool conversations: where the template writes tool calls or reasoning, the proof runs the tool battery too.

# A template that writes a tool call's arguments only while its message is the conversation's last: an earlier
# turn would be supervised without the arguments the model wrote.
FORGETS_ARGUMENTS = ("{% for m in messages %}{% set last = loop.last %}<|{{ m.role }}|>{{ m.content }}"
                     "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }}{% if last %} "
                     "{{ c.function.arguments | tojson }}{% endif %}</call>{% endfor %}<|end|>\n{% endfor %}"
                     "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def test_the_tool_battery_is_proved_where_the_template_writes_tool_calls():
    template = official_template("qwen3_5.jinja")
    report = prove(TemplateRunner(template), load_mask_rule("qwen3_5"), edge_cases())
    assert report.tool_conversations == len(tool_battery()) == 8
    assert report.conversations + sum(report.skipped.values()) == len(edge_cases()) + 8
    assert "(8 with tool calls, results and reasoning; " in report.line()
    toy = prove(TemplateRunner(TOY), infer_rule(TOY, "toy").rule, edge_cases())  # writes no tool call: none run
    assert toy.tool_conversations == 0 and toy.conversations == len(edge_cases()) - 1


def test_a_template_that_drops_earlier_tool_calls_arguments_is_refused():
    """Every text conversation passes (they run first); the first tool conversation shows it."""
    rule = infer_rule(FORGETS_ARGUMENTS, "forgets").rule
    expected = ("conversation 'tool call first': message 1: the template writes it as '<call>get_weather</call><|end|>"
                "\\n' when later messages follow, but as '<call>get_weather ")
    with pytest.raises(ProofFailure, match=re.escape(expected)):
        prove(TemplateRunner(FORGETS_ARGUMENTS), rule, edge_cases())


def test_harmony_through_jinja_skips_a_message_written_under_two_headers_and_proves_the_rest():
    """gpt-oss writes a last message's reasoning as an analysis message and its answer as a final one, two headers
    for one message: the Jinja path cannot place it (only the analysis would be supervised), so it is skipped. A
    call's content, which the template writes as the analysis of a last message and drops once its result follows,
    is no refusal: that piece is the one difference."""
    from sftpack.families.jinja import JinjaRenderer, TurnNotFound

    rule = load_mask_rule("gpt_oss")
    jinja = JinjaRenderer(official_template("gpt_oss.jinja"), rule, CLOCK)
    with pytest.raises(TurnNotFound, match="a message written under two headers cannot be placed"):
        jinja([{"role": "user", "content": "q"}, {"role": "assistant", "content": "A.", "reasoning_content": "r"}])
    report = prove(TemplateRunner(official_template("gpt_oss.jinja"), CLOCK), rule, edge_cases())
    assert report.tool_conversations == 1  # call with content; the seven others end with reasoning or a call
    assert report.skipped["template_error"] == 7
