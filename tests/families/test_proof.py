"""Proof before use (sftpack.families.proof): a rule is checked against the template itself on the battery."""

from __future__ import annotations

import dataclasses

import pytest

from helpers.shared import official_template
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
    # the template refuses a few (no user message, two answers under one header): the build skips the same ones
    assert sum(report.skipped.values()) <= 3, report.skipped


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
