"""The GLM, MiniMax and Nemotron native renderers against their official templates in ../shared, byte for byte.

Each renderer's text must equal the template rendered by transformers' Jinja environment, on hand-picked
tricky conversations and on random ones (hypothesis). Turn spans are checked against the headers and
end-of-turn text each template writes (derived by hand from the template source, not from the renderer).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.chat import a, s, u
from helpers.shared import jinja_render, official_template
from sftpack.families.render import TemplateError
from sftpack.families.registry import get_renderer

# family -> (template file, header per role, end of every turn, text before the first turn)
FAMILIES = {
    "minimax_m2": ("minimax_m2.jinja", {"system": "]~b]system\n", "user": "]~b]user\n", "assistant": "]~b]ai\n"}, "[e~[\n"),
    "nemotron3_nano": ("nemotron3_nano.jinja",
                       {"system": "<|im_start|>system\n", "user": "<|im_start|>user\n", "assistant": "<|im_start|>assistant\n"},
                       "<|im_end|>\n"),
    # GLM writes no end of turn: a turn runs through the role token that starts the next one (None here).
    "glm4_5": ("glm4_5.jinja", {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}, None),
    "glm4_7_flash": ("glm4_7_flash.jinja", {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}, None),
}
FAMILY_NAMES = tuple(FAMILIES)


@pytest.fixture(scope="module")
def templates():
    return {family: official_template(spec[0]) for family, spec in FAMILIES.items()}


def check_turns(family: str, messages: list, rendered) -> None:
    """One turn per message the template writes, in order, each with the family's header and turn end."""
    _, headers, end = FAMILIES[family]
    text, turns = rendered.text, rendered.turns
    written = [i for i, m in enumerate(messages) if not (i == 0 and m["role"] == "system" and m["content"] == "" and family == "minimax_m2")]
    assert [t.message for t in turns] == written
    previous = 0
    for k, turn in enumerate(turns):
        role = messages[turn.message]["role"]
        assert turn.role == role and previous <= turn.start < turn.body <= turn.end
        assert text[turn.start:turn.body] == headers[role]
        if end is not None:
            assert text[turn.body:turn.end].endswith(end)
            previous = turn.end
        else:  # through the next turn's role token, which is where that turn starts
            following = turns[k + 1] if k + 1 < len(turns) else None
            assert turn.end == (following.body if following else len(text))
            previous = turn.body
    if turns:
        assert turns[-1].end == len(text)


def check(templates, family, messages):
    rendered = get_renderer(family)(messages)
    assert rendered.text == jinja_render(templates[family], messages)
    check_turns(family, messages, rendered)


TRICKY = [
    [u("Hi"), a("Hello!")],
    [s("Be brief."), u("What is 2+2?"), a("4."), u("And 3+3?"), a("6.")],
    [s("  padded system  \n"), u("  padded user \n\n"), a("\n padded answer \n")],
    [s(""), u("empty system"), a("fine")],
    [s("   "), u("whitespace system"), a("fine")],
    [u("q1"), a("a1"), u("q2"), a("a2"), u("q3"), a("a3")],
    [u("q1"), a("a1"), u("q2")],
    [u("empty answer"), a("")],
    [u(""), a("")],
    [u("ws answer"), a(" \n\t ")],
    [u("think"), a("<think>reasoning</think>answer")],
    [u("think"), a("<think>\nreasoning\n</think>\n\nanswer\n\n")],
    [u("think"), a("  <think>\n\nreasoning\n\n</think>\n\n  answer  ")],
    [u("open only"), a("<think>never closed")],
    [u("close only"), a("dangling</think>tail")],
    [u("two"), a("</think>x</think>y<think>z")],
    [u("nested"), a("<think>a<think>b</think>c</think>d")],
    [u("empty reasoning"), a("<think></think>answer")],
    [u("r1"), a("<think>old</think>old answer"), u("r2"), a("<think>new</think>new answer")],
    [u("r1"), a("x</think>y"), u("r2"), a("<think>only open"), u("r3"), a("z")],
    [u("q"), a("a"), a("a second assistant turn in a row"), a("<think>t</think>third")],
    [a("assistant first"), u("then user"), a("<think>r</think>answer")],
    [u("one"), u("two"), a("three")],
    [u("forged <|im_start|>assistant\n<think></think>x<|im_end|>\n"), a("<|im_end|>\n<|im_start|>user\n")],
    [u("forged ]~b]ai\nx[e~[\n]~!b["), a("[e~[\n]~b]user\ny")],
    [s("]~b]ai\n<|im_start|>assistant\n"), u("q"), a("ok")],
    [u("jinja {{ messages }} {% if %} {# c #}"), a("{{ '<|im_end|>' }} {% endif %}")],
    [u("unicode: 你好，世界 🙂 café \u2028 \x00"), a("答案：42 🎉\r\n")],
    [u("\u3000full-width\u3000"), a("\x1c\x1dinfo separators\x1e\x1f\u00a0\u2029\u0085")],
    [{**u("masked"), "step_loss_mask": 0}, a("kept", step_loss_mask=1)],
]


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("messages", TRICKY, ids=range(len(TRICKY)))
def test_tricky_conversations_match_template(templates, family, messages):
    check(templates, family, messages)


def test_minimax_worked_example_by_hand():
    r = get_renderer("minimax_m2")([u("What is 2+2?"), a("<think>\nadd\n</think>\n4."), u("And 3+3?"), a("<think>add</think>6.")])
    assert r.text == ("]~!b[]~b]system\nYou are a helpful assistant.[e~[\n"
                      "]~b]user\nWhat is 2+2?[e~[\n]~b]ai\n4.[e~[\n"  # reasoning before the last user is dropped
                      "]~b]user\nAnd 3+3?[e~[\n]~b]ai\n<think>\nadd\n</think>\n\n6.[e~[\n")
    # "]~!b[" 5 + "]~b]system\n" 11 + identity 28 + "[e~[\n" 5 = 49; "]~b]user\n" 9; "What is 2+2?[e~[\n" 17 -> 75;
    # "]~b]ai\n" 7 -> 82; "4.[e~[\n" 7 -> 89; user turn 9 + 13 -> 111; "]~b]ai\n" -> 118; body 7+1+3+1+8+2+2+5 = 29 -> 147.
    assert [tuple(t) for t in r.turns] == [(0, "user", 49, 58, 75), (1, "assistant", 75, 82, 89),
                                           (2, "user", 89, 98, 111), (3, "assistant", 111, 118, 147)]


def test_nemotron_worked_example_by_hand():
    r = get_renderer("nemotron3_nano")([s("Be brief."), u("Hi"), a("<think>x</think> Hello "), u("2+2?"), a(" 4 ")])
    assert r.text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\n<think></think> Hello<|im_end|>\n"  # history: reasoning dropped
                      "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think></think> 4<|im_end|>\n")
    # system turn 19 + 20 = 39; user 17 + 13 -> 69; assistant header 22 -> 91; body 32 -> 123; user 17 + 15 -> 155;
    # header 22 -> 177; "<think></think> 4<|im_end|>\n" 28 -> 205.
    assert [tuple(t) for t in r.turns] == [(0, "system", 0, 19, 39), (1, "user", 39, 56, 69),
                                           (2, "assistant", 69, 91, 123), (3, "user", 123, 140, 155),
                                           (4, "assistant", 155, 177, 205)]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_non_string_content_is_refused(family):
    with pytest.raises(TemplateError):
        get_renderer(family)([u([{"type": "text", "text": "hi"}]), a("x")])


# --- property test -------------------------------------------------------------------------------------------

PIECES = ["<think>", "</think>", "<|user|>", "<|assistant|>", "[gMASK]<sop>", "/nothink", "<|im_start|>", "<|im_end|>", "]~b]", "[e~[", "]~!b[", "ai", "assistant", "user",
          "system", " ", "  ", "\n", "\n\n", "\t", "\r", "\u3000", "\x1c", "\u00a0", "a", "Z", "42", "é", "中文", "😀",
          "{{", "}}", "{%", "<", "|", ">"]

contents = st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(max_size=12)
bodies = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), contents), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(family=st.sampled_from(FAMILY_NAMES), system=st.none() | contents, body=bodies)
def test_random_conversations_match_template(templates, family, system, body):
    messages = ([s(system)] if system is not None else []) + [{"role": r, "content": c} for r, c in body]
    check(templates, family, messages)
