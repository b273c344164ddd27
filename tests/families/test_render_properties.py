"""The Qwen3, Qwen3.5 and gpt-oss native renderers against their official templates through transformers' Jinja:
the same text on each family's tricky conversations, and on random ones turns that tile it in message order."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import tricky_conversations
from helpers.shared import jinja_render, official_template
from sftpack.families import gpt_oss, qwen3, qwen3_5
from sftpack.families.render import TemplateError

GPT_OSS_DATE = "2025-08-05"  # the date the gpt-oss profiles pin


@dataclass(frozen=True)
class Case:
    render: Callable
    template: str
    pieces: tuple[str, ...]  # control text and awkward characters the contents are made of
    template_raises: bool = True  # False: the template renders every such conversation
    template_variables: Callable[[], dict] = dict
    tricky: tuple = ()  # conversations written by hand
    own_turns: tuple[str, ...] = ()  # roles the native renderer writes as a message of its own (gpt-oss: system)


QWEN_PIECES = ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_response>", "</tool_response>", "\n", " ",
               "\t", "assistant\n", "user", "é", "e\u0301", "東京", "😀", "\u3000", "\u200b", "word", "42")
CASES = {
    "qwen3_5": Case(qwen3_5.render, "qwen3_5.jinja", QWEN_PIECES + ("\x85",),
                    tricky=tuple(tricky_conversations.QWEN3_5)),
    "qwen3": Case(qwen3.render, "qwen3.jinja", QWEN_PIECES + ("\n\n",), template_raises=False,
                  tricky=tuple(tricky_conversations.QWEN3)),
    "gpt_oss": Case(gpt_oss.make_renderer(GPT_OSS_DATE), "gpt_oss.jinja",
                    ("<|start|>", "<|end|>", "<|return|>", "<|message|>", "<|channel|>", "final", "analysis",
                     "assistant", "<|channel|>final<|message|>", "<|call|>", "\n", "\n\n", " ", "é", "東京", "😀",
                     "word", "# Instructions"),
                    template_variables=lambda: {"strftime_now": datetime.date.fromisoformat(GPT_OSS_DATE).strftime},
                    tricky=tuple(tricky_conversations.GPT_OSS), own_turns=("system",)),
}


def official(case: Case, messages: list) -> str:
    return jinja_render(official_template(case.template), messages, **case.template_variables())


@pytest.mark.parametrize("family, index", [(family, index) for family in sorted(CASES)
                                           for index in range(len(CASES[family].tricky))])
def test_native_renderer_equals_the_official_template_on_tricky_conversations(family, index):
    case = CASES[family]
    assert case.render(case.tricky[index]).text == official(case, case.tricky[index])


def conversations(pieces):
    content = st.lists(st.sampled_from(pieces) | st.text(max_size=6), max_size=8).map("".join)
    turns = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), content), min_size=1, max_size=6)
    system = st.none() | content
    return st.tuples(system, turns).map(
        lambda drawn: ([{"role": "system", "content": drawn[0]}] if drawn[0] is not None else [])
        + [{"role": role, "content": text} for role, text in drawn[1]])


@pytest.mark.parametrize("family", sorted(CASES))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_native_renderer_equals_the_official_template_on_random_conversations(family, data):
    case = CASES[family]
    messages = data.draw(conversations(case.pieces))
    try:
        expected = official(case, messages)
    except Exception:
        if not case.template_raises:
            raise
        with pytest.raises(TemplateError):
            case.render(messages)
        return
    rendered = case.render(messages)
    assert rendered.text == expected
    ends = [t.start for t in rendered.turns[1:]] + [len(rendered.text)]
    assert [t.end for t in rendered.turns] == ends  # turns tile the text (after a template's own system message)
    assert [t.message for t in rendered.turns if t.role not in case.own_turns] == \
        [i for i, m in enumerate(messages) if m["role"] not in case.own_turns]
