"""DeepSeek-V4's reasoning, tool calls, tool results and tools: the native renderer against the port of the reference
encoder (``helpers.dsv4_reference``, itself checked against the reference's golden tool case), masks against spans
derived by hand, forged control text.

How a conversation reaches the reference: its tools on its leading system message (an empty one added when it has
none: the reference writes tools only on a system or developer message), tool-call arguments as the JSON string
the reference parses, thinking mode where an assistant message carries reasoning, chat mode otherwise.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.dsv4_reference import DSML, PARAMETER, TOOL_CALL, TOOL_CALLS, encode_messages, to_json
from helpers.tool_conversations import BATTERY, WEATHER_CONVERSATION, forged_conversations
from sftpack.families.conversation import check_conversation
from sftpack.families.deepseek_v4 import render
from sftpack.families.encode import make_encoder
from sftpack.families.profiles import load_profile
from sftpack.families.registry import get_family
from sftpack.families.render import TemplateError
from sftpack.tokenizers.loading import load_vocab

MODEL = "DeepSeek-V4-Flash"
EOS, ASSISTANT, THINK_END = "<｜end▁of▁sentence｜>", "<｜Assistant｜>", "</think>"


def thinking(messages) -> bool:
    return any(m["role"] == "assistant" and m.get("reasoning_content") is not None for m in messages)


def reference(conversation) -> str:
    messages = copy.deepcopy(conversation["messages"])
    for m in messages:
        for c in m.get("tool_calls", ()):
            if not isinstance(c["function"]["arguments"], str):
                c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
    tools = conversation.get("tools")
    if tools:
        if messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": ""})
        messages[0]["tools"] = tools
    return encode_messages(messages, thinking_mode="thinking" if thinking(messages) else "chat")


def native(conversation):
    checked = check_conversation(conversation)
    return render(checked.messages, tools=checked.tools)


# --------------------------------------------------------------------------------------------------------
# The port against the reference's golden tool case (ds4rs encoding/tests: input 1 / output 1, thinking mode, tools
# on the first message), and the native renderer against it.

GOLDEN_1_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a specific location",
     "parameters": {"type": "object", "properties": {
         "location": {"type": "string", "description": "The city name"},
         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}},
         "required": ["location"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the web for information",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "Search query"},
         "num_results": {"type": "integer", "description": "Number of results to return"}}, "required": ["query"]}}},
]
GOLDEN_1_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What's the weather in Beijing?"},
    {"role": "assistant",
     "reasoning_content": "The user wants to know the weather in Beijing. I should use the get_weather tool.",
     "tool_calls": [{"id": "call_001", "type": "function", "function": {
         "name": "get_weather", "arguments": "{\"location\": \"Beijing\", \"unit\": \"celsius\"}"}}]},
    {"role": "tool", "tool_call_id": "call_001",
     "content": "{\"temperature\": 22, \"condition\": \"sunny\", \"humidity\": 45}"},
    {"role": "assistant", "reasoning_content": "Got the weather data. Let me format a nice response.",
     "content": "The weather in Beijing is currently sunny with a temperature of 22°C and 45% humidity."},
]
GOLDEN_1_OUTPUT = (
    "<｜begin▁of▁sentence｜>You are a helpful assistant.\n\n## Tools\n\nYou have access to a set of tools to help answer "
    "the user's question. You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n"
    "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"$TOOL_NAME\">\n<｜DSML｜parameter name=\"$PARAMETER_NAME\" "
    "string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n...\n</｜DSML｜invoke>\n<｜DSML｜invoke "
    "name=\"$TOOL_NAME2\">\n...\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>\n\nString parameters should be specified as is "
    "and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON "
    "format and set `string=\"false\"`.\n\nIf thinking_mode is enabled (triggered by <think>), you MUST output your "
    "complete reasoning inside <think>...</think> BEFORE any tool calls or final response.\n\nOtherwise, output "
    "directly after </think> with tool calls or final response.\n\n### Available Tool Schemas\n\n"
    "{\"name\": \"get_weather\", \"description\": \"Get the weather for a specific location\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\", \"description\": \"The city name\"}, "
    "\"unit\": {\"type\": \"string\", \"enum\": [\"celsius\", \"fahrenheit\"], \"description\": \"Temperature unit\"}}, "
    "\"required\": [\"location\"]}}\n{\"name\": \"search\", \"description\": \"Search the web for information\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"query\": {\"type\": \"string\", \"description\": "
    "\"Search query\"}, \"num_results\": {\"type\": \"integer\", \"description\": \"Number of results to return\"}}, "
    "\"required\": [\"query\"]}}\n\nYou MUST strictly follow the above defined tool name and parameter schemas to "
    "invoke tool calls.\n<｜User｜>What's the weather in Beijing?<｜Assistant｜><think>The user wants to know the "
    "weather in Beijing. I should use the get_weather tool.</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke "
    "name=\"get_weather\">\n<｜DSML｜parameter name=\"location\" string=\"true\">Beijing</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"unit\" string=\"true\">celsius</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls><｜end▁of▁sentence｜><｜User｜><tool_result>{\"temperature\": 22, \"condition\": \"sunny\", "
    "\"humidity\": 45}</tool_result><｜Assistant｜><think>Got the weather data. Let me format a nice response.</think>"
    "The weather in Beijing is currently sunny with a temperature of 22°C and 45% humidity.<｜end▁of▁sentence｜>"
)


def test_reference_port_reproduces_the_golden_tool_case():
    messages = copy.deepcopy(GOLDEN_1_MESSAGES)
    messages[0]["tools"] = GOLDEN_1_TOOLS
    assert encode_messages(messages, thinking_mode="thinking") == GOLDEN_1_OUTPUT


def test_native_renderer_reproduces_the_golden_tool_case():
    assert native({"messages": GOLDEN_1_MESSAGES, "tools": GOLDEN_1_TOOLS}).text == GOLDEN_1_OUTPUT


# --------------------------------------------------------------------------------------------------------
# The battery (reasoning and tools in first, middle and last turns, parallel calls, consecutive results, a call
# with empty content) and its forged variants: the native renderer equals the port byte for byte.

EXTRA = [
    ("results-out-of-call-order", {"tools": None, "messages": [
        {"role": "user", "content": "both"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"n": 1}}},
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": {"n": 2}}}]},
        {"role": "tool", "content": "second", "tool_call_id": "b"}, {"role": "user", "content": "and text"},
        {"role": "tool", "content": "first", "tool_call_id": "a"}, {"role": "assistant", "content": "ok"}]}),
    ("tools-no-system-assistant-first", {"tools": BATTERY[1][1]["tools"], "messages": [
        {"role": "assistant", "content": "hello", "reasoning_content": "r0"}, {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "r1"}]}),
    ("reasoning-none-and-empty-arguments", {"tools": None, "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "", "reasoning_content": "",
                                           "tool_calls": [{"type": "function", "function": {"name": "g", "arguments": {}}}]},
        {"role": "tool", "content": "r"}, {"role": "assistant", "content": "done"}]}),
]
CASES = BATTERY + EXTRA + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(60, seed=5))]


@pytest.mark.parametrize("name,conversation", CASES, ids=[name for name, _ in CASES])
def test_battery_renders_as_the_reference(name, conversation):
    assert native(conversation).text == reference(conversation)


def test_arguments_as_a_json_string_render_as_the_object():
    as_string = json.loads(json.dumps(WEATHER_CONVERSATION))
    for m in as_string["messages"]:
        for c in m.get("tool_calls", ()):
            c["function"]["arguments"] = json.dumps(c["function"]["arguments"])
    assert native(as_string).text == native(WEATHER_CONVERSATION).text == reference(WEATHER_CONVERSATION)


def test_family_declares_the_fields_it_writes():
    family = get_family("deepseek_v4")
    assert {"reasoning_content", "tool_calls", "tool_results", "tools"} <= family.fields
    assert "developer" in family.fields and family.unrendered == {"name"}


# --------------------------------------------------------------------------------------------------------
# Masks: each assistant turn after a user message, from after its generation prompt (<｜Assistant｜> and its think
# marker) through <｜end▁of▁sentence｜>; tool results, the tools block, system and user text never.


@pytest.fixture(scope="module")
def encoder():
    profile = load_profile(MODEL)
    return make_encoder(profile, load_vocab(profile, hub=False))


def supervised(encoder, conversation) -> list[str]:
    text, spans = encoder.prepare(conversation)
    return [text[a:b] for a, b in spans]


def dsml(*calls) -> str:
    """The tool-call block by the reference's own templates (the port), for hand-written expectations."""
    invokes = []
    for name, arguments in calls:
        parameters = "\n".join(PARAMETER.format(dsml=DSML, key=k, is_str="true" if isinstance(v, str) else "false",
                                                value=v if isinstance(v, str) else to_json(v)) for k, v in arguments.items())
        invokes.append(TOOL_CALL.format(dsml=DSML, name=name, arguments=parameters))
    return "\n\n" + TOOL_CALLS.format(dsml=DSML, tool_calls="\n".join(invokes), block="tool_calls")


PARIS = ("get_weather", {"city": "Paris"})
LYON = ("get_weather", {"city": "Lyon", "unit": "c"})
HAND = {  # battery name -> supervised texts, written out by hand
    "issue": ["I should call the weather tool.</think>" + dsml(PARIS) + EOS,
              "The tool says 18 and clear.</think>It is 18 degrees and clear in Paris." + EOS],
    # tools: every turn keeps its reasoning
    "call-first-turn-then-user": ["need the tool</think>Let me look." + dsml(PARIS) + EOS, "done</think>18C." + EOS,
                                  "same as before</think>Still 18C." + EOS],
    "parallel-calls-consecutive-results": ["two cities</think>" + dsml(PARIS, LYON) + EOS,
                                           "both back</think>Paris 18C, Lyon 21C." + EOS],
    # no reasoning anywhere: chat mode, the </think> of the prompt unsupervised
    "call-with-content": ["Searching now." + dsml(("search", BATTERY[3][1]["messages"][1]["tool_calls"][0]["function"]
                                                   ["arguments"])) + EOS, "Found 3." + EOS],
    "call-in-last-turn": ["call it</think>" + dsml(PARIS) + EOS],
    "calls-without-tools-block": [dsml(PARIS) + EOS, "done" + EOS],
    # no tools: reasoning dropped before the last user message (a tool result is one), kept after it
    "reasoning-earlier-turns": ["one" + EOS, "two" + EOS, "r3</think>three" + EOS],
    "tool-result-last": ["r</think>" + dsml(PARIS) + EOS],
}


@pytest.mark.parametrize("name", HAND)
def test_masks_equal_hand_derived_spans(encoder, name):
    assert supervised(encoder, dict(BATTERY)[name]) == HAND[name]


def test_issue_conversation_token_mask(encoder):
    from transformers import PreTrainedTokenizerFast

    from helpers.chat import supervised_runs
    from sftpack.tokenizers.offline import package_tokenizer_json

    hf = PreTrainedTokenizerFast(tokenizer_file=str(package_tokenizer_json()))
    ids, mask = encoder(WEATHER_CONVERSATION)
    assert ids.tolist() == hf(reference(WEATHER_CONVERSATION), add_special_tokens=False)["input_ids"]
    assert supervised_runs(hf.decode, ids, mask) == HAND["issue"]


@pytest.mark.parametrize("k,conversation", list(enumerate(forged_conversations(60, seed=5))))
def test_forged_control_text_never_moves_a_span(encoder, k, conversation):
    """Each span is its assistant message's own text as the reference writes it, nothing of any other message."""
    messages = conversation["messages"]
    text, spans = encoder.prepare(conversation)
    merged_users = [i for i, m in enumerate(messages) if m["role"] in ("user", "tool")
                    and (i + 1 == len(messages) or messages[i + 1]["role"] not in ("user", "tool"))]
    last_user = max(merged_users)
    headed = [i for i in range(1, len(messages)) if messages[i]["role"] == "assistant"
              and messages[i - 1]["role"] in ("user", "tool")]
    expected = []
    for i in headed:
        m = messages[i]
        kept = thinking(messages) and (bool(conversation["tools"]) or i > last_user)
        calls = dsml(*[(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]) \
            if m.get("tool_calls") else ""
        expected.append(((m.get("reasoning_content") or "") + THINK_END if kept else "") + m["content"] + calls + EOS)
    assert [text[a:b] for a, b in spans] == expected
    assert all(text[:a].endswith((ASSISTANT + THINK_END, ASSISTANT + "<think>")) for a, _ in spans)


# --------------------------------------------------------------------------------------------------------
# Random conversations of every role in any order (tool results first, after a system message, between users;
# developer messages anywhere;
# assistants with or without reasoning, calls, ids), with and without tools: the renderer equals the port.

_text = st.sampled_from(["", "a", " x ", "<｜User｜>", "<｜Assistant｜></think>", "<think>", EOS, "｜DSML｜", "東京",
                         "\n\n"])
_call = st.builds(lambda name, value, id: {**({"id": id} if id else {}), "type": "function",
                                           "function": {"name": name, "arguments": {"k": value}}},
                  st.sampled_from(["f", "g"]), st.one_of(_text, st.integers(), st.booleans(), st.none()),
                  st.sampled_from([None, "c1", "c2"]))
_message = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, _text),
    st.builds(lambda c, id: {"role": "tool", "content": c, **({"tool_call_id": id} if id else {})}, _text,
              st.sampled_from([None, "c1", "c2", "zz"])),
    st.builds(lambda c, r, calls: {"role": "assistant", "content": c, **({"reasoning_content": r} if r is not None
                                                                          else {}), **({"tool_calls": calls} if calls else {})},
              _text, st.none() | _text, st.lists(_call, max_size=3)),
    st.builds(lambda c: {"role": "developer", "content": c}, _text),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(system=st.none() | _text, body=st.lists(_message, min_size=1, max_size=8), with_tools=st.booleans())
def test_random_tool_conversations_match_the_reference(system, body, with_tools):
    messages = ([{"role": "system", "content": system}] if system is not None else []) + body
    conversation = {"messages": messages, "tools": BATTERY[1][1]["tools"] if with_tools else None}
    try:
        expected = reference(conversation)
    except AssertionError:  # the encoder asserts that a developer message it writes has content
        with pytest.raises(TemplateError):
            render(messages, tools=conversation["tools"])
        return
    assert render(messages, tools=conversation["tools"]).text == expected
