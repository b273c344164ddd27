"""Test-only port of DeepSeek-V4's reference prompt encoder, the parts text conversations reach.

The reference is ``encoding/encoding_dsv4.py`` in the DeepSeek-V4 model repository (copies: sgl-project/sglang
``python/sglang/srt/entrypoints/openai/encoding_dsv4.py``, adapted; supermy/ds4rs ``encoding/encoding_dsv4.py``
@ 2ecc534c, read for this port). Ported function by function and branch by branch - ``encode_messages``,
``render_message``, ``merge_tool_messages``, ``sort_tool_results_by_call_order``, ``find_last_user_index``,
``_drop_thinking_messages``, ``render_tools``, ``encode_arguments_to_dsml`` - keeping the thinking modes,
``drop_thinking``, tools (on a system or developer message), tool calls (DSML), tool results, response formats,
``reasoning_effort``, tasks and ``latest_reminder``; ``context`` and output parsing are left out. sftpack's native
renderer (``sftpack.families.deepseek_v4``) is written independently and compared with this port.
"""

from __future__ import annotations

import copy
import json

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
THINK_START, THINK_END = "<think>", "</think>"
USER, ASSISTANT, LATEST_REMINDER = "<｜User｜>", "<｜Assistant｜>", "<｜latest_reminder｜>"
DSML = "｜DSML｜"
TOOL_CALL = '<{dsml}invoke name="{name}">\n{arguments}\n</{dsml}invoke>'
TOOL_CALLS = "<{dsml}{block}>\n{tool_calls}\n</{dsml}{block}>"
PARAMETER = '<{dsml}parameter name="{key}" string="{is_str}">{value}</{dsml}parameter>'
RESPONSE_FORMAT = "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n{schema}"
REASONING_EFFORT_MAX = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, "
    "rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n")
TOOLS_TEMPLATE = """## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \
"<{dsml}tool_calls>" block like the following:

<{dsml}tool_calls>
<{dsml}invoke name="$TOOL_NAME">
<{dsml}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{dsml}parameter>
...
</{dsml}invoke>
<{dsml}invoke name="$TOOL_NAME2">
...
</{dsml}invoke>
</{dsml}tool_calls>

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, \
arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by {think_start}), you MUST output your complete reasoning inside \
{think_start}...{think_end} BEFORE any tool calls or final response.

Otherwise, output directly after {think_end} with tool calls or final response.

### Available Tool Schemas

{tool_schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
"""
TASK_TOKENS = {"action": "<｜action｜>", "query": "<｜query｜>", "authority": "<｜authority｜>",
               "domain": "<｜domain｜>", "title": "<｜title｜>", "read_url": "<｜read_url｜>"}


def to_json(value) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except Exception:
        return json.dumps(value, ensure_ascii=True)


def render_tools(tools) -> str:
    return TOOLS_TEMPLATE.format(tool_schemas="\n".join(to_json(t) for t in tools), dsml=DSML,
                                 think_start=THINK_START, think_end=THINK_END)


def encode_arguments_to_dsml(tool_call) -> str:
    try:
        arguments = json.loads(tool_call["arguments"])
    except Exception:
        arguments = {"arguments": tool_call["arguments"]}
    return "\n".join(PARAMETER.format(dsml=DSML, key=k, is_str="true" if isinstance(v, str) else "false",
                                      value=v if isinstance(v, str) else to_json(v)) for k, v in arguments.items())


def find_last_user_index(messages) -> int:
    for idx in range(len(messages) - 1, -1, -1):
        if messages[idx].get("role") in ("user", "developer"):
            return idx
    return -1


def render_message(index, messages, thinking_mode, drop_thinking=True, reasoning_effort=None) -> str:
    assert thinking_mode in ("chat", "thinking")
    prompt = ""
    msg = messages[index]
    last_user_idx = find_last_user_index(messages)
    role, content = msg.get("role"), msg.get("content")
    tools, response_format = msg.get("tools"), msg.get("response_format")
    tool_calls = msg.get("tool_calls")
    if tools:
        tools = [tool["function"] for tool in tools]
    if tool_calls:
        tool_calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in tool_calls]
    assert reasoning_effort in ("max", None, "high")
    if index == 0 and thinking_mode == "thinking" and reasoning_effort == "max":
        prompt += REASONING_EFFORT_MAX
    if role == "system":
        prompt += content or ""
        if tools:
            prompt += "\n\n" + render_tools(tools)
        if response_format:
            prompt += "\n\n" + RESPONSE_FORMAT.format(schema=to_json(response_format))
    elif role == "developer":
        assert content
        developer = USER + content
        if tools:
            developer += "\n\n" + render_tools(tools)
        if response_format:
            developer += "\n\n" + RESPONSE_FORMAT.format(schema=to_json(response_format))
        prompt += developer
    elif role == "user":
        prompt += USER
        blocks = msg.get("content_blocks")
        if blocks:
            parts = []
            for block in blocks:
                if block.get("type") == "text":
                    parts.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    result = block.get("content", "")
                    if isinstance(result, list):
                        result = "\n\n".join(b.get("text", "") if b.get("type") == "text"
                                               else f"[Unsupported {b.get('type')}]" for b in result)
                    parts.append(f"<tool_result>{result}</tool_result>")
                else:
                    parts.append(f"[Unsupported {block.get('type')}]")
            prompt += "\n\n".join(parts)
        else:
            prompt += content or ""
    elif role == "latest_reminder":
        prompt += LATEST_REMINDER + content
    elif role == "tool":
        raise NotImplementedError("tool messages are merged into user messages first")
    elif role == "assistant":
        calls = ""
        if tool_calls:
            invokes = [TOOL_CALL.format(dsml=DSML, name=c.get("name"), arguments=encode_arguments_to_dsml(c))
                       for c in tool_calls]
            calls += "\n\n" + TOOL_CALLS.format(dsml=DSML, tool_calls="\n".join(invokes), block="tool_calls")
        thinking = ""
        prev_has_task = index - 1 >= 0 and messages[index - 1].get("task") is not None
        if thinking_mode == "thinking" and not prev_has_task:
            if not drop_thinking or index > last_user_idx:
                thinking = (msg.get("reasoning_content") or "") + THINK_END
        prompt += thinking + (content or "") + calls + ("" if msg.get("wo_eos", False) else EOS)
    else:
        raise NotImplementedError(f"Unknown role: {role}")

    if index + 1 < len(messages) and messages[index + 1].get("role") not in ("assistant", "latest_reminder"):
        return prompt
    task = msg.get("task")
    if task is not None:
        if task != "action":
            prompt += TASK_TOKENS[task]
        else:
            prompt += ASSISTANT + (THINK_END if thinking_mode != "thinking" else THINK_START) + TASK_TOKENS[task]
    elif role in ("user", "developer"):
        prompt += ASSISTANT
        if not drop_thinking and thinking_mode == "thinking":
            prompt += THINK_START
        elif drop_thinking and thinking_mode == "thinking" and index >= last_user_idx:
            prompt += THINK_START
        else:
            prompt += THINK_END
    return prompt


def merge_tool_messages(messages):
    merged = []
    for msg in messages:
        msg = copy.deepcopy(msg)
        role = msg.get("role")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""), "content": msg.get("content", "")}
            if merged and merged[-1].get("role") == "user" and "content_blocks" in merged[-1]:
                merged[-1]["content_blocks"].append(block)
            else:
                merged.append({"role": "user", "content_blocks": [block]})
        elif role == "user":
            block = {"type": "text", "text": msg.get("content", "")}
            if (merged and merged[-1].get("role") == "user" and "content_blocks" in merged[-1]
                    and merged[-1].get("task") is None):
                merged[-1]["content_blocks"].append(block)
            else:
                new = {"role": "user", "content": msg.get("content", ""), "content_blocks": [block]}
                for key in ("task", "wo_eos", "mask"):
                    if key in msg:
                        new[key] = msg[key]
                merged.append(new)
        else:
            merged.append(msg)
    return merged


def sort_tool_results_by_call_order(messages):
    order = {}
    for msg in messages:
        role = msg.get("role")
        if role == "assistant" and msg.get("tool_calls"):
            order = {}
            for idx, call in enumerate(msg["tool_calls"]):
                call_id = call.get("id") or call.get("function", {}).get("id", "")
                if call_id:
                    order[call_id] = idx
        elif role == "user" and msg.get("content_blocks"):
            results = [b for b in msg["content_blocks"] if b.get("type") == "tool_result"]
            if len(results) > 1 and order:
                ordered = iter(sorted(results, key=lambda b: order.get(b.get("tool_use_id", ""), 0)))
                msg["content_blocks"] = [next(ordered) if b.get("type") == "tool_result" else b
                                         for b in msg["content_blocks"]]
    return messages


def _drop_thinking_messages(messages):
    last_user_idx = find_last_user_index(messages)
    keep = {"user", "system", "tool", "latest_reminder", "direct_search_results"}
    result = []
    for idx, msg in enumerate(messages):
        role = msg.get("role")
        if role in keep or idx >= last_user_idx:
            result.append(msg)
        elif role == "assistant":
            msg = copy.copy(msg)
            msg.pop("reasoning_content", None)
            result.append(msg)
    return result


def encode_messages(messages, thinking_mode, drop_thinking=True, add_default_bos_token=True,
                    reasoning_effort=None) -> str:
    """``encode_messages`` without ``context`` (the reference's default)."""
    messages = sort_tool_results_by_call_order(merge_tool_messages(messages))
    prompt = BOS if add_default_bos_token else ""
    effective_drop = drop_thinking and not any(m.get("tools") for m in messages)
    if thinking_mode == "thinking" and effective_drop:
        messages = _drop_thinking_messages(messages)
    for idx in range(len(messages)):
        prompt += render_message(idx, messages, thinking_mode, drop_thinking=effective_drop,
                                 reasoning_effort=reasoning_effort)
    return prompt
