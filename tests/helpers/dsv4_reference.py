"""Test-only port of DeepSeek-V4's reference prompt encoder, the parts text conversations reach.

The reference is ``encoding/encoding_dsv4.py`` in the DeepSeek-V4 model repository (copies: sgl-project/sglang
``python/sglang/srt/entrypoints/openai/encoding_dsv4.py``, adapted; supermy/ds4rs ``encoding/encoding_dsv4.py``
@ 2ecc534c, read for this port). Ported function by function and branch by branch - ``encode_messages``,
``render_message``, ``merge_tool_messages``, ``find_last_user_index``, ``_drop_thinking_messages`` - keeping
the thinking modes, ``drop_thinking``, tasks and ``latest_reminder`` so the port can be checked against the
reference's golden case; tool declarations, tool calls, response formats and output parsing are left out
(text conversations never reach them). sftpack's native renderer (``sftpack.families.deepseek_v4``) is written
independently and compared with this port.
"""

from __future__ import annotations

import copy

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
THINK_START, THINK_END = "<think>", "</think>"
USER, ASSISTANT, LATEST_REMINDER = "<｜User｜>", "<｜Assistant｜>", "<｜latest_reminder｜>"
TASK_TOKENS = {"action": "<｜action｜>", "query": "<｜query｜>", "authority": "<｜authority｜>",
               "domain": "<｜domain｜>", "title": "<｜title｜>", "read_url": "<｜read_url｜>"}


def find_last_user_index(messages) -> int:
    for idx in range(len(messages) - 1, -1, -1):
        if messages[idx].get("role") in ("user", "developer"):
            return idx
    return -1


def render_message(index, messages, thinking_mode, drop_thinking=True) -> str:
    assert thinking_mode in ("chat", "thinking")
    prompt = ""
    msg = messages[index]
    last_user_idx = find_last_user_index(messages)
    role, content = msg.get("role"), msg.get("content")
    if role == "system":
        prompt += content or ""
    elif role == "developer":
        assert content
        prompt += USER + content
    elif role == "user":
        prompt += USER
        blocks = msg.get("content_blocks")
        if blocks:
            parts = []
            for block in blocks:
                if block.get("type") == "text":
                    parts.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    parts.append(f"<tool_result>{block.get('content', '')}</tool_result>")
                else:
                    parts.append(f"[Unsupported {block.get('type')}]")
            prompt += "\n\n".join(parts)
        else:
            prompt += content or ""
    elif role == "latest_reminder":
        prompt += LATEST_REMINDER + content
    elif role == "assistant":
        thinking = ""
        prev_has_task = index - 1 >= 0 and messages[index - 1].get("task") is not None
        if thinking_mode == "thinking" and not prev_has_task:
            if not drop_thinking or index > last_user_idx:
                thinking = (msg.get("reasoning_content") or "") + THINK_END
        prompt += thinking + (content or "") + ("" if msg.get("wo_eos", False) else EOS)
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


def encode_messages(messages, thinking_mode, drop_thinking=True, add_default_bos_token=True) -> str:
    """``encode_messages`` without ``context`` (the reference's default)."""
    messages = merge_tool_messages(messages)
    prompt = BOS if add_default_bos_token else ""
    effective_drop = drop_thinking and not any(m.get("tools") for m in messages)
    if thinking_mode == "thinking" and effective_drop:
        messages = _drop_thinking_messages(messages)
    for idx in range(len(messages)):
        prompt += render_message(idx, messages, thinking_mode, drop_thinking=effective_drop)
    return prompt
