"""Native renderer of the official Qwen3.8 chat template (no generation prompt): text, reasoning, tool calls, tool
results and the tools block.

Byte-identical to ``qwen3_8.jinja`` (as shipped by Qwen/Qwen3.8-27B; TRL ships it as
``trl/chat_templates/qwen3_8.jinja``) rendered by transformers with its defaults: ``enable_thinking`` and
``preserve_thinking`` unset, ``reasoning_effort`` the profile's (the template's default is ``xhigh``). Unlike
Qwen3.5's template it

- writes a system turn of its own holding the reasoning-effort instruction (``xhigh`` and ``low``; ``medium`` writes
  none), before the system message's content, or alone when the conversation has no system message;
- keeps the think block of every assistant turn (``preserve_thinking``), and takes reasoning only from a message's
  ``reasoning_content``: a ``<think>...</think>`` inside ``content`` is written as it is, after an empty think block;
- writes a tool call's argument that is not a string as JSON (``true``, ``null``, ``3``), and the reasoning-effort
  instruction at the head of the tools block's system turn.

    >>> render([{"role": "user", "content": " Hi "}, {"role": "assistant", "content": "Yo"}], "medium").text
    '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nYo<|im_end|>\\n'
"""

from __future__ import annotations

import json

from sftpack.families.family import Family, TemplateOption
from sftpack.families.qwen3_5 import TOOLS_HEAD, TOOLS_TAIL, write_turns
from sftpack.families.render import Rendered, TemplateError, TurnWriter, last_query_index

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
EFFORTS = {
    "xhigh": ("Reasoning effort is set to xhigh. Please think carefully through the task, validate key assumptions, "
              "consider plausible alternatives, and prioritize correctness, consistency, and clarity in the final "
              "answer."),
    "medium": "",
    "low": ("Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion "
            "without unnecessary elaboration."),
}


def check_effort(value) -> str:
    if value not in EFFORTS:
        raise ValueError(f"reasoning_effort must be one of {', '.join(EFFORTS)}, got {value!r}")
    return value


def _system(messages: list, instructions: str, tools: list | None) -> TurnWriter:
    """The system turn: the instruction, the tools block, then the system message's content (trimmed); or what of
    them there is."""
    content = messages[0]["content"].strip() if messages[0]["role"] == "system" else ""
    if tools:
        block = (IM_START + "system\n" + (instructions + "\n\n" if instructions else "") + TOOLS_HEAD
                 + "".join("\n" + json.dumps(t, ensure_ascii=False) for t in tools) + TOOLS_TAIL
                 + ("\n\n" + content if content else "") + IM_END + "\n")
    elif content:
        block = IM_START + "system\n" + (instructions + "\n\n" if instructions else "") + content + IM_END + "\n"
    else:
        block = IM_START + "system\n" + instructions + IM_END + "\n" if instructions else ""
    if messages[0]["role"] != "system" or not (content or tools):
        return TurnWriter(block)  # the template's own system turn: no message's turn
    out = TurnWriter()
    out.turn(0, "system", "", block)
    return out


def render(messages: list, reasoning_effort: str = "xhigh", tools: list | None = None) -> Rendered:
    if not messages:
        raise TemplateError("No messages provided.")
    out = _system(messages, EFFORTS[check_effort(reasoning_effort)], tools)
    if last_query_index(messages, strip=True) is None:
        raise TemplateError("No user query found in messages.")
    return write_turns(out, messages, _assistant)


def _assistant(index: int, message: dict, content: str) -> str:
    reasoning = message.get("reasoning_content")
    reasoning = reasoning.strip() if isinstance(reasoning, str) else ""
    return "<think>\n" + reasoning + "\n</think>\n\n" + content + _calls(message, content) + IM_END + "\n"


def _calls(message: dict, content: str) -> str:
    out = ""
    for k, call in enumerate(message.get("tool_calls", ())):
        function = call["function"]
        out += ("\n<tool_call>\n<function=" if k else "\n\n<tool_call>\n<function=" if content.strip()
                else "<tool_call>\n<function=") + function["name"] + ">\n"
        for name, value in function["arguments"].items():  # a string as it is, anything else as JSON
            out += "<parameter=" + name + ">\n" + (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            out += "\n</parameter>\n"
        out += "</function>\n</tool_call>"
    return out


def jinja_effort(value: str) -> dict:
    return {"reasoning_effort": value}


FAMILY = Family(
    render=render,
    options={"reasoning_effort": TemplateOption(check=check_effort, expected="xhigh, medium or low", jinja=jinja_effort,
                                                record="reasoning_effort {value}", default="xhigh")},
    fields=frozenset({"reasoning_content", "tool_calls", "tool_results", "tools", "developer"}),
    unrendered=frozenset({"tool_call_ids", "tool_call_id", "name"}),
)
