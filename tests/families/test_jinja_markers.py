"""The Jinja path's turn finding on content built to confuse it: every family's end and header markers whole,
split, doubled and overlapped (``[e~`` before MiniMax's ``[e~[``, ``<|im_end`` before ``<|im_end|>``) inside
messages. The reference is the family's native renderer, byte-identical to the same official template: where
the Jinja path places a conversation, its turns must be exactly the native renderer's; where it cannot, it
raises ``TemplateError`` (the build's counted ``template_error`` skip), never anything else."""

from __future__ import annotations

import datetime
import random

import pytest

from helpers.shared import official_template
from sftpack.families.jinja import JinjaRenderer
from sftpack.families.profiles import load_mask_rule
from sftpack.families.registry import get_family
from sftpack.families.render import TemplateError
from sftpack.families.mask import supervised_spans

# family -> (official template, the tokenizer's special tokens the path is given, template variables, options)
FAMILIES = {
    "qwen3": ("qwen3.jinja", ["<|im_start|>", "<|im_end|>"], {}, {}),
    "qwen3_5": ("qwen3_5.jinja", ["<|im_start|>", "<|im_end|>"], {}, {}),
    "minimax_m2": ("minimax_m2.jinja", ["]~!b[", "]~b]", "[e~["], {"bos_token": "]~!b["}, {}),
    "nemotron3_nano": ("nemotron3_nano.jinja", ["<|im_start|>", "<|im_end|>"], {}, {}),
    "gemma4": ("gemma4.jinja", ["<|turn>", "<turn|>"], {"bos_token": "<bos>"}, {}),
    "gpt_oss": ("gpt_oss.jinja", ["<|start|>", "<|end|>", "<|return|>", "<|channel|>", "<|message|>"], {},
                {"date": "2025-06-28"}),
    "kimi_k25": ("kimi_k25.miles_fixed.jinja", ["<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>"],
                 {}, {}),
}
# Every family's turn markers (each family's conversations hold all of them, not only its own).
MARKERS = ["<|im_end|>", "<|im_start|>", "[e~[", "]~b]", "<turn|>", "<|turn>", "<|end|>", "<|return|>",
           "<|start|>", "<|im_assistant|>", "<|im_middle|>", "<｜end▁of▁sentence｜>"]
PER_FAMILY = 700  # x 7 families: ~5,000 conversations, a few seconds


def _pieces() -> list[str]:
    pieces = ["hello", "world", " ", "\n", "\n\n", "<think>", "</think>", "x", "ai\n", "assistant\n", "model\n"]
    for marker in MARKERS:
        pieces += [marker, marker + marker, marker[:-1] + marker]
        for k in range(1, len(marker)):
            pieces += [marker[:k], marker[k:], marker[:k] + marker, marker + marker[k:]]
    return pieces


PIECES = _pieces()


def _content(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 5)))


def _conversation(rng: random.Random) -> list[dict]:
    messages = [{"role": "system", "content": _content(rng)}] if rng.random() < 0.3 else []
    for _ in range(rng.randint(1, 3)):
        messages += [{"role": "user", "content": _content(rng)}, {"role": "assistant", "content": _content(rng)}]
    return messages


def _jinja(family: str) -> JinjaRenderer:
    template, specials, variables, options = FAMILIES[family]
    rule = load_mask_rule(family)
    variables = dict(variables)
    if "date" in options:  # as the build passes a profile's pinned date
        variables["strftime_now"] = datetime.date.fromisoformat(options["date"]).strftime
    return JinjaRenderer(official_template(template), rule, variables, specials)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_jinja_turns_equal_the_native_renderers_on_split_and_overlapped_markers(family):
    jinja, rule = _jinja(family), load_mask_rule(family)
    native = get_family(family).renderer(FAMILIES[family][3])
    rng = random.Random(family)
    placed = unplaceable = 0
    for _ in range(PER_FAMILY):
        conversation = _conversation(rng)
        try:
            reference = native(conversation)
        except TemplateError:
            continue  # the template itself refuses it (the build skips it as template_error)
        try:
            rendered = jinja(conversation)
        except TemplateError:
            unplaceable += 1
            continue
        assert rendered.text == reference.text, conversation
        expected = [(t.message, t.start, t.body, t.end) for t in reference.turns if t.role == rule.role]
        assert [(t.message, t.start, t.body, t.end) for t in rendered.turns] == expected, conversation
        assert supervised_spans(rendered, conversation, rule) == supervised_spans(reference, conversation, rule)
        placed += 1
    assert placed >= 0.95 * (placed + unplaceable) and placed > PER_FAMILY // 2, (placed, unplaceable)


@pytest.mark.parametrize("content", ["ok [e~", "ok [e~\n\n", "[e~", "a[e~[e~", "<think>r</think>ok [e~", "[e~[e~[e~"])
def test_minimax_self_overlapping_end_marker(content):
    """``[e~[`` overlaps itself: content ending in ``[e~`` followed by the template's ``[e~[`` holds an earlier
    ``[e~[`` that starts inside the content."""
    conversation = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content}]
    reference = get_family("minimax_m2").renderer()(conversation)
    rendered = _jinja("minimax_m2")(conversation)
    assert rendered.turns == tuple(t for t in reference.turns if t.role == "assistant")
