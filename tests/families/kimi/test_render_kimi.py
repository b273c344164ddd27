"""The native Kimi K2.5/K2.6 renderer against the Jinja templates in ../shared, byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.chat import a, s, u
from helpers.shared import jinja_render, official_template
from sftpack.families.kimi import HEADERS, render
from sftpack.families.render import TemplateError
from sftpack.families.registry import get_renderer

K26 = "kimi_k26.kite1.0_renamed.jinja"
K25 = "kimi_k25.miles_fixed.jinja"
TEMPLATES = (K26, K25)


@pytest.fixture(scope="module")
def templates():
    return {name: official_template(name) for name in TEMPLATES}


TRICKY = [
    [u("Hi"), a("Hello!")],
    [s("You are terse."), u("2+2?"), a("4")],
    [s("  padded system  \n"), u("  padded user \n\n"), a("\n padded answer \n")],
    [u("q1"), a("a1"), u("q2"), a("a2"), u("q3"), a("a3")],
    [u("q1"), a("a1"), u("q2")],  # ends on a user turn
    [u("only a question")],
    [s("only a system prompt")],
    [u("empty answer"), a("")],
    [u(""), a("")],
    [u("think"), a("<think>reasoning</think>answer")],
    [u("think"), a("<think>\nreasoning\n</think>\n\nanswer")],
    [u("open only"), a("<think>never closed")],
    [u("close only"), a("dangling</think>tail")],
    [u("two"), a("</think>x</think>y<think>z")],
    [u("r1"), a("<think>old</think>old answer"), u("r2"), a("<think>new</think>new answer")],
    [u("markers <|im_end|><|im_assistant|>assistant<|im_middle|>"), a("<|im_end|>")],
    [u("x"), a("<|im_assistant|>assistant<|im_middle|><think></think>fake<|im_end|>")],
    [u("<|im_system|>system<|im_middle|>"), a("<|im_user|>user<|im_middle|>hi")],
    [u("jinja {{ messages }} {% if %} {# c #}"), a("{{ '<|im_end|>' }}")],
    [u("unicode: 你好，世界 🙂 café \u2028 \x00"), a("答案：42 🎉\r\n")],
    [s("sys"), u("a"), s("a second system message"), a("b")],
    [u("q"), a("a"), a("a second assistant turn in a row")],
    [a("assistant first"), u("then user")],
    [],
]


@pytest.mark.parametrize("messages", TRICKY)
@pytest.mark.parametrize("name", TEMPLATES)
def test_matches_templates(templates, name, messages):
    assert render(messages).text == jinja_render(templates[name], messages)


@pytest.mark.parametrize("messages", TRICKY)
def test_template_options_do_not_change_text_conversations(templates, messages):
    # thinking / preserve_thinking only touch reasoning_content, which text conversations do not carry.
    expected = render(messages).text
    for name in TEMPLATES:
        for kwargs in ({"thinking": False}, {"thinking": True}, {"preserve_thinking": True},
                       {"preserve_thinking": True, "thinking": False}):
            assert jinja_render(templates[name], messages, **kwargs) == expected, (name, kwargs)


def test_reasoning_content_and_step_loss_mask_are_ignored(templates):
    plain = [s("sys"), u("q1"), a("a1"), u("q2"), a("a2")]
    decorated = [
        s("sys"),
        {**u("q1"), "step_loss_mask": 0},
        a("a1", reasoning_content="hidden 1", step_loss_mask=0),
        u("q2"),
        a("a2", reasoning_content="hidden 2", reasoning="hidden", step_loss_mask=1),
    ]
    assert render(decorated) == render(plain)
    # With default options the template drops reasoning on every turn of a conversation that ends in an
    # assistant answer, so the decorated conversation renders the same in Jinja too.
    for name in TEMPLATES:
        assert jinja_render(templates[name], decorated) == render(plain).text


def test_expected_strings():
    r = render([s("Be brief."), u("Capital of France?"), a("Paris.")])
    assert r.text == (
        "<|im_system|>system<|im_middle|>Be brief.<|im_end|>"
        "<|im_user|>user<|im_middle|>Capital of France?<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|><think></think>Paris.<|im_end|>"
    )
    assert [r.text[t.body:t.end] for t in r.turns] == [
        "Be brief.<|im_end|>", "Capital of France?<|im_end|>", "<think></think>Paris.<|im_end|>"]

    r = render([u(" a "), a("<think>r</think>\nb\n"), u("c")])
    assert r.text == (
        "<|im_user|>user<|im_middle|> a <|im_end|>"
        "<|im_assistant|>assistant<|im_middle|><think></think><think>r</think>\nb\n<|im_end|>"
        "<|im_user|>user<|im_middle|>c<|im_end|>"
    )
    # user turn: 28-char header + " a " + 10-char <|im_end|> = 41; assistant header: 38 chars
    assert r.turns[1] == (1, "assistant", 41, 79, 79 + len("<think></think><think>r</think>\nb\n<|im_end|>"))


def test_mask_rule_example():
    # masks/kimi_k25.yaml: the supervised span starts after the header and its leading <think>.
    r = render([u("q"), a("Paris.")])
    t = r.turns[1]
    assert r.text[t.start:t.end] == "<|im_assistant|>assistant<|im_middle|><think></think>Paris.<|im_end|>"
    assert r.text[t.body:].startswith("<think>")
    assert r.text[t.body + len("<think>"):t.end] == "</think>Paris.<|im_end|>"


def test_registry_and_errors():
    assert get_renderer("kimi_k25") is render
    with pytest.raises(TemplateError):
        render([{"role": "tool", "content": "x"}])
    with pytest.raises(TemplateError):
        render([{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    assert render([]).text == ""


def check_turns(messages, r):
    assert [t.message for t in r.turns] == list(range(len(messages)))
    pos = 0
    for turn, message in zip(r.turns, messages):
        assert turn.role == message["role"]
        assert turn.start == pos and turn.start < turn.body < turn.end
        assert r.text[turn.start:turn.body] == HEADERS[message["role"]]
        body = r.text[turn.body:turn.end]
        assert body.endswith("<|im_end|>")
        prefix = "<think></think>" if message["role"] == "assistant" else ""
        assert body == prefix + message["content"] + "<|im_end|>"
        pos = turn.end
    assert pos == len(r.text)


@pytest.mark.parametrize("messages", TRICKY)
def test_turn_spans(messages):
    check_turns(messages, render(messages))


PIECES = ["<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>", "<think>",
          "</think>", "<|tool_calls_section_begin|>", "[EOS]", "user", "assistant", "system", "{{", "}}",
          "{%", "%}", " ", "  ", "\n", "\n\n", "\t", "\r", "a", "Z", "7", "你好", "🙂", "é"]
content = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=8).map("".join)


@st.composite
def conversations(draw):
    messages = []
    if draw(st.booleans()):
        messages.append(s(draw(content)))
    for _ in range(draw(st.integers(0, 4))):
        messages.append(u(draw(content)))
        if draw(st.booleans()) or _ < 3:
            messages.append(a(draw(content)))
    return messages


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_property_matches_templates(templates, messages):
    r = render(messages)
    for name in TEMPLATES:
        assert r.text == jinja_render(templates[name], messages)
    check_turns(messages, r)
