"""Native renderer of the official Qwen3.8 chat template (text conversations, no tools, no generation prompt).

Byte-identical to ``qwen3_8.jinja`` (as shipped by Qwen/Qwen3.8-27B; TRL ships it as
``trl/chat_templates/qwen3_8.jinja``) rendered by transformers with its defaults: ``enable_thinking`` and
``preserve_thinking`` unset, ``reasoning_effort`` the profile's (the template's default is ``xhigh``). Unlike
Qwen3.5's template it

- writes a system turn of its own holding the reasoning-effort instruction (``xhigh`` and ``low``; ``medium`` writes
  none), before the system message's content, or alone when the conversation has no system message;
- keeps the think block of every assistant turn (``preserve_thinking``), and takes reasoning only from a message's
  ``reasoning_content``: a ``<think>...</think>`` inside ``content`` is written as it is, after an empty think block.

    >>> render([{"role": "user", "content": " Hi "}, {"role": "assistant", "content": "Yo"}], "medium").text
    '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nYo<|im_end|>\\n'
"""

from __future__ import annotations

from sftpack.families.family import Family, TemplateOption
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


def _system(messages: list, instructions: str, out: TurnWriter) -> TurnWriter:
    """The system turn: the instruction, then the system message's content (trimmed), or either alone."""
    content = messages[0]["content"].strip() if messages[0]["role"] == "system" else ""
    if messages[0]["role"] == "system" and content:
        out.turn(0, "system", IM_START + "system\n", (instructions + "\n\n" if instructions else "") + content + IM_END + "\n")
    elif instructions:
        out = TurnWriter(IM_START + "system\n" + instructions + IM_END + "\n")  # the template's own: no message's turn
    return out


def render(messages: list, reasoning_effort: str = "xhigh") -> Rendered:
    if not messages:
        raise TemplateError("No messages provided.")
    out = _system(messages, EFFORTS[check_effort(reasoning_effort)], TurnWriter())
    if last_query_index(messages, strip=True) is None:
        raise TemplateError("No user query found in messages.")
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"].strip()
        if role == "system":
            if index != 0:
                raise TemplateError("System message must be at the beginning.")
        elif role == "user":
            out.turn(index, role, IM_START + "user\n", content + IM_END + "\n")
        elif role == "assistant":
            reasoning = message.get("reasoning_content")
            reasoning = reasoning.strip() if isinstance(reasoning, str) else ""
            out.turn(index, role, IM_START + "assistant\n", "<think>\n" + reasoning + "\n</think>\n\n" + content + IM_END + "\n")
        else:
            raise TemplateError("Unexpected message role.")
    return out.rendered()


def jinja_effort(value: str) -> dict:
    return {"reasoning_effort": value}


FAMILY = Family(
    render=render,
    options={"reasoning_effort": TemplateOption(check=check_effort, expected="xhigh, medium or low", jinja=jinja_effort,
                                                record="reasoning_effort {value}", default="xhigh")},
)
