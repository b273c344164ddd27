"""DeepSeek-V4's ``developer`` messages: the reference encoder writes one as ``<｜User｜>`` + its content, never merged
with a user or tool message beside it, ends it with the assistant header when an answer follows, and in thinking mode
without tools leaves out one that comes before the last user (or tool, or developer) message. The texts below are
written out by hand from the encoder, compared with the native renderer and the port of the reference
(``helpers.dsv4_reference``); developer text is never supervised.
"""

from __future__ import annotations

import copy
import json

import pytest

from helpers.dsv4_reference import DSML, PARAMETER, TOOL_CALL, TOOL_CALLS, encode_messages
from helpers.tool_conversations import PARIS, TOOLS
from sftpack.families.conversation import Skip, check_conversation
from sftpack.families.deepseek_v4 import render
from sftpack.families.encode import make_encoder
from sftpack.families.profiles import load_profile
from sftpack.families.render import TemplateError
from sftpack.tokenizers.loading import load_vocab

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
U, A = "<｜User｜>", "<｜Assistant｜>"


def s(c):
    return {"role": "system", "content": c}


def d(c):
    return {"role": "developer", "content": c}


def u(c):
    return {"role": "user", "content": c}


def a(c, reasoning=None, calls=None):
    return {"role": "assistant", "content": c, **({"reasoning_content": reasoning} if reasoning is not None else {}),
            **({"tool_calls": calls} if calls else {})}


def t(c, id=None):
    return {"role": "tool", "content": c, **({"tool_call_id": id} if id else {})}


PARIS_DSML = "\n\n" + TOOL_CALLS.format(dsml=DSML, block="tool_calls", tool_calls=TOOL_CALL.format(
    dsml=DSML, name="get_weather", arguments=PARAMETER.format(dsml=DSML, key="city", is_str="true", value="Paris")))

# (name, messages, tools, the text by hand (None: the port's, for a tools block), the supervised texts by hand)
CASES = [
    ("system-developer-user", [s("S"), d("D"), u("q"), a("a")], None,
     BOS + "S" + U + "D" + U + "q" + A + "</think>a" + EOS, ["a" + EOS]),
    ("developer-after-user", [u("q"), d("D"), a("a")], None,
     BOS + U + "q" + U + "D" + A + "</think>a" + EOS, ["a" + EOS]),
    ("developer-first-answered", [d("D1"), a("x"), u("q"), a("a")], None,  # the header after D1: x is a turn
     BOS + U + "D1" + A + "</think>x" + EOS + U + "q" + A + "</think>a" + EOS, ["x" + EOS, "a" + EOS]),
    # thinking mode, no tools: both developer messages come before the last user message, and are left out
    ("thinking-developers-dropped", [d("D1"), u("q1"), a("a1", "r1"), d("D2"), u("q2"), a("a2", "r2")], None,
     BOS + U + "q1" + A + "</think>a1" + EOS + U + "q2" + A + "<think>r2</think>a2" + EOS,
     ["a1" + EOS, "r2</think>a2" + EOS]),
    # thinking mode, no tools: the developer message is the last prompt, kept, and it opens the kept reasoning
    ("thinking-developer-last", [u("q1"), a("a1", "r1"), d("D"), a("a2", "r2")], None,
     BOS + U + "q1" + A + "</think>a1" + EOS + U + "D" + A + "<think>r2</think>a2" + EOS,
     ["a1" + EOS, "r2</think>a2" + EOS]),
    # a tool result and a developer message beside it stay two user messages
    ("result-then-developer", [u("q"), a("", None, [PARIS]), t("18C", "call_1"), d("D"), a("ok")], None,
     BOS + U + "q" + A + "</think>" + PARIS_DSML + EOS + U + "<tool_result>18C</tool_result>" + U + "D" + A
     + "</think>ok" + EOS, [PARIS_DSML + EOS, "ok" + EOS]),
    # thinking mode with tools: nothing is left out, every turn keeps its reasoning
    ("tools-thinking-developer", [d("D"), u("q"), a("", "r", [PARIS]), t("18C", "call_1"), a("ok", "r2")], TOOLS,
     None, ["r</think>" + PARIS_DSML + EOS, "r2</think>ok" + EOS]),
]


def reference(messages, tools) -> str:
    messages = copy.deepcopy(messages)
    for m in messages:
        for c in m.get("tool_calls", ()):
            c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
    if tools:
        if messages[0]["role"] != "system":
            messages.insert(0, s(""))
        messages[0]["tools"] = tools
    thinking = any(m["role"] == "assistant" and m.get("reasoning_content") is not None for m in messages)
    return encode_messages(messages, thinking_mode="thinking" if thinking else "chat")


@pytest.fixture(scope="module")
def encoder():
    profile = load_profile("DeepSeek-V4-Flash")
    return make_encoder(profile, load_vocab(profile, hub=False))


@pytest.mark.parametrize("name,messages,tools,text,runs", CASES, ids=[c[0] for c in CASES])
def test_developer_messages_render_as_the_reference(name, messages, tools, text, runs):
    rendered = render(check_conversation({"messages": messages, "tools": tools}).messages, tools=tools).text
    assert rendered == reference(messages, tools)
    if text is not None:
        assert rendered == text


@pytest.mark.parametrize("name,messages,tools,text,runs", CASES, ids=[c[0] for c in CASES])
def test_developer_text_is_never_supervised(encoder, name, messages, tools, text, runs):
    full, spans = encoder.prepare({"messages": messages, "tools": tools})
    assert [full[x:y] for x, y in spans] == runs
    if tools:
        assert full.startswith(BOS + "\n\n## Tools\n\n") and U + "D" + U + "q" + A + "<think>" in full


def test_developer_tokens_are_the_references(encoder):
    from transformers import PreTrainedTokenizerFast

    from helpers.chat import supervised_runs
    from sftpack.tokenizers.offline import package_tokenizer_json

    hf = PreTrainedTokenizerFast(tokenizer_file=str(package_tokenizer_json()))
    for name, messages, tools, _, runs in CASES:
        ids, mask = encoder({"messages": messages, "tools": tools})
        assert ids.tolist() == hf(reference(messages, tools), add_special_tokens=False)["input_ids"], name
        assert supervised_runs(hf.decode, ids, mask) == runs, name


def test_an_empty_developer_message_is_refused_as_the_reference_refuses_it(encoder):
    messages = [d(""), u("q"), a("a")]
    with pytest.raises(AssertionError):
        reference(messages, None)
    with pytest.raises(TemplateError):
        render(messages)
    with pytest.raises(Skip) as info:
        encoder({"messages": messages})
    assert info.value.reason == "template_error"
    # left out before it is written (thinking mode, no tools), it is no error in either
    dropped = [d(""), u("q"), a("a", "r")]
    assert render(dropped).text == reference(dropped, None) == BOS + U + "q" + A + "<think>r</think>a" + EOS

