"""The rule inferred from a chat template alone (sftpack.families.infer), against what is known: each native family's
shipped rule and native renderer, on its official template in ../shared (skipped without it)."""

from __future__ import annotations

import datetime

import pytest

from helpers.rows_fixtures import sample_conversations
from helpers.shared import official_template
from sftpack.families.mask import close_final_turn, supervised_spans
from sftpack.families.infer import InferenceError, infer_rule
from sftpack.families.jinja import JinjaRenderer
from sftpack.families.registry import FAMILIES
from sftpack.families.profiles import load_mask_rule

DATE = "2025-08-05"  # the gpt-oss profiles' pinned date
# family -> (official template, what the template is given besides messages)
NATIVE = {
    "qwen3_5": ("qwen3_5.jinja", {}),
    "qwen3": ("qwen3.jinja", {}),
    "gemma4": ("gemma4.jinja", {"bos_token": "<bos>"}),
    "kimi_k25": ("kimi_k26.kite1.0_renamed.jinja", {}),
    "gpt_oss": ("gpt_oss.jinja", {"strftime_now": datetime.date.fromisoformat(DATE).strftime}),
    "minimax_m2": ("minimax_m2.jinja", {}),
    "nemotron3_nano": ("nemotron3_nano.jinja", {}),
    "glm4_5": ("glm4_5.jinja", {}),
    "glm4_7_flash": ("glm4_7_flash.jinja", {}),
    "qwen3_8": ("qwen3_8.jinja", {}),
}
RULE = {"qwen3_8": "qwen3_5"}  # a family whose profile masks with another family's rule
# Where the inferred rule is not the shipped file, why (the agreement is then shown on 2,000 conversations):
DIFFERENT_TEXT = {
    "glm4_5": "the shipped rule also ends a turn at <|observation|>, the role token that opens tool results after a "
              "turn that calls a tool (the inference probes conversations without tool calls)",
    "glm4_7_flash": "as glm4_5: <|observation|> ends a turn that calls a tool",
    "gpt_oss": "the shipped rule also ends a turn at <|call|>, which closes a tool call (the inference probes "
               "conversations without tool calls)",
    "qwen3_8": "the template writes <think>\\n after every assistant header, so the inferred header holds it (the "
               "shipped qwen3_5 rule skips it: Qwen3.5's template writes it only on turns after the last user message)",
    "kimi_k25": "the template writes <think> after every assistant header, so the inferred header holds it (the shipped "
                "rule skips it) and names the role literally (the shipped {name} also matches message names, which "
                "the build's conversations do not carry)",
}


@pytest.fixture(scope="module")
def conversations():
    return sample_conversations(2000)


def test_every_native_family_is_covered_and_deepseek_v4_states_why():
    assert set(NATIVE) | {"deepseek_v4"} == {name for name, f in FAMILIES.items() if f.render is not None}


def test_deepseek_v4_has_no_template_to_infer_from():
    pytest.skip("DeepSeek-V4 ships no Jinja chat template: its reference is the Python encoder encoding_dsv4.py, "
                "which the native renderer ports, so there is no template to infer a rule from")


@pytest.mark.parametrize("family", NATIVE)
def test_the_inferred_rule_agrees_with_the_shipped_rule(family, conversations):
    file, variables = NATIVE[family]
    template = official_template(file)
    inferred = infer_rule(template, RULE.get(family, family), variables).rule
    shipped = load_mask_rule(RULE.get(family, family))
    if family not in DIFFERENT_TEXT:
        assert inferred == shipped
        return
    assert inferred != shipped, f"{family}'s inferred rule now equals the shipped file: drop it from DIFFERENT_TEXT"
    # identical text and supervised characters (so identical tokens and masks) on 2,000 sample conversations: the
    # template through the Jinja path under the inferred rule, against the native renderer under the shipped rule
    native = FAMILIES[family].renderer({"date": DATE} if family == "gpt_oss" else None)
    jinja = JinjaRenderer(template, inferred, variables)
    assert len(conversations) == 2000
    for messages in conversations:
        ours = close_final_turn(jinja(messages), inferred)
        theirs = close_final_turn(native(messages), shipped)
        assert ours.text == theirs.text
        assert supervised_spans(ours, messages, inferred) == supervised_spans(theirs, messages, shipped)


@pytest.mark.parametrize("file, convention, strips", [
    ("qwen3_5.jinja", "end-of-turn token", True), ("qwen3.jinja", "end-of-turn token", False),
    ("gpt_oss.jinja", "channels", False), ("glm4_5.jinja", "next role header ends the turn", True),
    ("inkling.jinja", "channels", False)])
def test_the_facts_the_rule_rests_on(file, convention, strips):
    facts = infer_rule(official_template(file), "x", {"strftime_now": lambda fmt: DATE}).facts
    assert (facts.convention, facts.strips_content) == (convention, strips)


def test_inkling_small_is_masked_by_its_role_and_end_of_sampling_tokens():
    # The template writes an answer as <|message_model|><|content_text|>{answer}<|end_message|>, then
    # <|content_model_end_sampling|>; the generation prompt is <|message_model|> (read off inkling.jinja by hand).
    inferred = infer_rule(official_template("inkling.jinja"), "inkling")
    rule = inferred.rule
    assert (rule.header, rule.skip_after_header, rule.end_of_turn, rule.after_end_of_turn, rule.final_turn_end) == (
        "<|message_model|>", "", "<|end_message|><|content_model_end_sampling|>", "", "")
    assert rule.example["supervised_chars"] == "<|content_text|>Paris.<|end_message|><|content_model_end_sampling|>"
    assert inferred.facts.generation_prompt == "<|message_model|>"


def test_the_worked_example_is_the_shipped_one():
    rule = infer_rule(official_template("qwen3_5.jinja"), "qwen3_5").rule
    shipped = load_mask_rule("qwen3_5")
    assert rule.example["supervised_chars"] == shipped.example["supervised_chars"]


@pytest.mark.parametrize("template, message", [
    ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}", "has no generation prompt"),
    ("{% for m in messages %}<|{{ m.role }}|>{% if m.role != 'assistant' %}{{ m.content }}{% endif %}<|end|>{% endfor %}"
     "{% if add_generation_prompt %}<|assistant|>{% endif %}", "does not write an assistant message's text content"),
    ("{{ raise_exception('no') }}", "raises on a probe conversation: no"),
])
def test_a_template_the_probes_cannot_read_is_one_line(template, message):
    with pytest.raises(InferenceError, match=message) as caught:
        infer_rule(template, "x")
    assert "\n" not in str(caught.value)
