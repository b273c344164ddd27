"""The native Gemma 4 renderer against the official launch-era template (``gemma4.jinja``), byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.chat import a, s, u
from helpers.shared import jinja_render, official_template
from sftpack.families.gemma4 import render
from sftpack.families.render import TemplateError
from sftpack.families.registry import get_renderer

HEADERS = {"system": "<|turn>system\n", "developer": "<|turn>system\n", "user": "<|turn>user\n",
           "assistant": "<|turn>model\n"}


@pytest.fixture(scope="module")
def template() -> str:
    return official_template("gemma4.jinja")


def reference(template: str, messages: list) -> str:
    return jinja_render(template, messages, bos_token="<bos>")


def check_turns(messages: list, rendered) -> None:
    """Turn spans: one per message, in order, contiguous from just after <bos> to the end of the text."""
    text, turns = rendered.text, rendered.turns
    assert text.startswith("<bos>")
    assert [t.message for t in turns] == list(range(len(messages)))
    pos = len("<bos>")
    for turn, message in zip(turns, messages):
        assert turn.role == message["role"]
        assert turn.start == pos and turn.start < turn.body <= turn.end
        header = HEADERS.get(message["role"], f"<|turn>{message['role']}\n")
        if message["role"] in ("system", "developer") and turn.message > 0:
            header = f"<|turn>{message['role']}\n"  # a later system/developer message keeps its own role name
        assert text[turn.start:turn.body] == header
        assert text[turn.body:turn.end].endswith("<turn|>\n")
        pos = turn.end
    assert pos == len(text)


def check(template: str, messages: list) -> None:
    rendered = render(messages)
    assert rendered.text == reference(template, messages)
    check_turns(messages, rendered)


TRICKY = [
    [u("Hi"), a("Hello")],
    [s("You are helpful."), u("Hi"), a("Hello")],
    [s(" \n sys \n "), u("q1"), a("a1"), u("q2"), a("a2"), u("q3"), a("a3")],
    [u("Hi"), a("")],
    [u(""), a("")],
    [s(""), u(""), a("")],
    [s("   "), u(" \n\t "), a("\n\n \n")],
    [u("Hi"), a("\n\nanswer after newlines")],
    [u("Hi"), a("answer with trailing newlines\n\n")],
    [u("a <|turn>model\nfake<turn|>\n b"), a("x<turn|>\n<|turn>user\ny")],
    [u("<bos><bos>"), a("<bos>")],
    [u("q"), a("<|channel>thought\nLet me think.<channel|>The answer is 4.")],
    [u("q"), a("<|channel>thought\nplan\n<channel|>\n\n  final  \n")],
    [u("q"), a("<|channel>unclosed thought")],
    [u("q"), a("before<|channel>unclosed thought")],
    [u("q"), a("stray<channel|>close")],
    [u("q"), a("<channel|><|channel><channel|><|channel>")],
    [u("q"), a("a<|channel>1<channel|>b<|channel>2<channel|>c")],
    [u("x<|channel>y<|channel>z<channel|>w"), a("x<|channel>y<|channel>z<channel|>w")],
    [u("<|channel>thought\nuser text keeps channels<channel|>"), a("ok")],
    [s("<|channel>thought\nsystem keeps channels<channel|>"), u("q"), a("ok")],
    [u("你好，世界"), a("こんにちは 😀👍🏽 👨‍👩‍👧")],
    [u("שלום עולם"), a("مرحبا بالعالم \u200f\u200e")],
    [u("\u3000full-width space\u3000"), a("\x1c\x1dinfo separators are whitespace to str.strip\x1e\x1f")],
    [u("\u00a0nbsp\u2028"), a("\u2029para\u0085")],
    [u("<|think|><|tool>decl<tool|><|tool_call>call<tool_call|><|\"|>"), a("<|tool_response>r<tool_response|>")],
    [a("model speaks first"), u("then user")],
    [u("one"), u("two"), a("three"), a("four")],
    [s("only a system prompt")],
    [u("only a user message")],
    [{"role": "developer", "content": " dev prompt "}, u("q"), a("a")],
    [s("first"), u("q"), s(" second system "), a("a")],
    [u("q", ), {"role": "system", "content": "late system"}, a("a")],
    [u("q"), a("a"), {"role": "tool", "content": " tool text "}],
    [{"role": "model", "content": "<|channel>t<channel|> role model also strips"}],
    [{**u("masked"), "step_loss_mask": 0}, {**a("kept"), "step_loss_mask": 1}],
]


@pytest.mark.parametrize("messages", TRICKY, ids=range(len(TRICKY)))
def test_tricky_conversations_match_template(template, messages):
    check(template, messages)


def test_get_renderer_returns_this_module():
    assert get_renderer("gemma4") is render


def test_hand_derived_text_and_spans():
    messages = [s(" Be brief. "), u("\n\nHi\n"), a("\n<|channel>thought\nplan<channel|>\n\nHello!  \n")]
    r = render(messages)
    assert r.text == ("<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n"
                      "<|turn>model\nHello!<turn|>\n")
    # <bos> is 5 chars; "<|turn>system\n" 14; "Be brief.<turn|>\n" 17; "<|turn>user\n" 12; "Hi<turn|>\n" 10;
    # "<|turn>model\n" 13; "Hello!<turn|>\n" 14.
    assert [tuple(t) for t in r.turns] == [
        (0, "system", 5, 19, 36),
        (1, "user", 36, 48, 58),
        (2, "assistant", 58, 71, 85),
    ]


@pytest.mark.parametrize(
    "content, body",
    [
        ("  \n<|channel>thought\nplan<channel|>\n\nAnswer: 42 \n", "Answer: 42<turn|>\n"),
        ("a<channel|>b<|channel>c", "ab<turn|>\n"),  # stray close vanishes; unclosed open drops the tail
        ("x<|channel>y<|channel>z<channel|>w", "xw<turn|>\n"),  # up to the first open, then after the close
        ("<|channel>only thinking<channel|>", "<turn|>\n"),
        ("", "<turn|>\n"),
        ("keep <turn|> and <|turn> and <bos>", "keep <turn|> and <|turn> and <bos><turn|>\n"),
    ],
)
def test_model_turn_body_by_hand(content, body):
    r = render([u("q"), a(content)])
    turn = r.turns[1]
    assert r.text[turn.start:turn.body] == "<|turn>model\n"
    assert r.text[turn.body:turn.end] == body


def test_empty_conversation_raises_like_template(template):
    with pytest.raises(Exception) as jinja_error:
        reference(template, [])
    with pytest.raises(TemplateError) as native_error:
        render([])
    assert str(native_error.value) == str(jinja_error.value)


def test_non_string_content_is_refused():
    # The template has branches for list / None content that this renderer does not cover: refuse, loudly.
    with pytest.raises(TemplateError):
        render([u(None)])
    with pytest.raises(TemplateError):
        render([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])


# --- property test -------------------------------------------------------------------------------------------

PIECES = ["<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|channel>thought\n", "<bos>", "<eos>", "<|think|>",
          "user", "model", "system", " ", "  ", "\n", "\n\n", "\t", "\r", "\u3000", "\x1c", "\u00a0",
          "a", "Z", "42", "é", "中文", "שלום", "😀", "👍🏽", "{", "}", "<", "|", ">"]

contents = st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(max_size=12)
bodies = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), contents), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(system=st.none() | contents, body=bodies)
def test_random_conversations_match_template(template, system, body):
    messages = ([s(system)] if system is not None else []) + [{"role": r, "content": c} for r, c in body]
    check(template, messages)
