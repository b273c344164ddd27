"""Tool conversations from every source shape: a JSONL ``tools`` field, a parquet ``tools`` column (a JSON string)
with tool calls in the ``messages`` structs, ShareGPT's ``function_call`` / ``observation`` turns and ``tools``;
each reads as the same conversation, and a row or table holding two conversation shapes is refused."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.tool_conversations import WEATHER_CONVERSATION
from sftpack.base.errors import UsageError
from sftpack.families.conversation import check_conversation
from sftpack.sources import open_source

EXPECTED = check_conversation(WEATHER_CONVERSATION)


def _checked(source):
    (rid, conversation), = source.take([0])
    return check_conversation(conversation)


def _same(checked):
    # ids of tool calls and tool_call_id aside (ShareGPT has none), the conversation is the one given
    strip = lambda ms: [{k: v for k, v in m.items() if k != "tool_call_id"} |  # noqa: E731
                        ({"tool_calls": [{k: v for k, v in c.items() if k != "id"} for c in m["tool_calls"]]}
                         if "tool_calls" in m else {}) for m in ms]
    assert strip(checked.messages) == strip(EXPECTED.messages)
    assert checked.tools == EXPECTED.tools


def test_jsonl_tools_field(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", **WEATHER_CONVERSATION}) + "\n")
    checked = _checked(open_source(str(path)))
    assert checked.messages == EXPECTED.messages and checked.tools == EXPECTED.tools


def test_parquet_tools_column_and_tool_calls_in_the_structs(tmp_path):
    messages = json.loads(json.dumps(WEATHER_CONVERSATION["messages"]))
    for m in messages:  # arguments as a JSON string, as datasets store them
        for call in m.get("tool_calls", ()):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    table = pa.Table.from_pylist([{"id": "a", "messages": messages, "tools": json.dumps(WEATHER_CONVERSATION["tools"])}])
    pq.write_table(table, tmp_path / "t.parquet")
    _same(_checked(open_source(str(tmp_path / "t.parquet"))))


SHAREGPT_ROW = {"id": "s", "tools": json.dumps([WEATHER_CONVERSATION["tools"][0]["function"]]),  # bare, as LLaMA-Factory
                "conversations": [
                    {"from": "system", "value": "You are a helpful assistant."},
                    {"from": "human", "value": "What is the weather in Paris?"},
                    {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})},
                    {"from": "observation", "value": "{\"temperature\": 18, \"sky\": \"clear\"}"},
                    {"from": "gpt", "value": "It is 18 degrees and clear in Paris."}]}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_sharegpt_function_call_and_observation(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    if suffix == ".jsonl":
        path.write_text(json.dumps(SHAREGPT_ROW) + "\n")
    else:
        pq.write_table(pa.Table.from_pylist([SHAREGPT_ROW]), path)
    checked = _checked(open_source(str(path), sharegpt=True))
    roles = [m["role"] for m in checked.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert checked.messages[2]["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert checked.tools == WEATHER_CONVERSATION["tools"]


def test_a_table_with_two_conversation_shapes_is_refused(tmp_path):
    table = pa.Table.from_pylist([{"messages": [{"role": "user", "content": "q"}],
                                   "conversations": [{"from": "human", "value": "q"}]}])
    pq.write_table(table, tmp_path / "both.parquet")
    for sharegpt in (False, True):
        with pytest.raises(UsageError, match="both `messages` and `conversations`"):
            open_source(str(tmp_path / "both.parquet"), sharegpt=sharegpt)
