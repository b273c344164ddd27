"""Render a conversation to text, remembering where every turn was written.

A renderer turns ``messages`` (a validated list of ``{"role", "content"[, "step_loss_mask"]}``) into the
exact text the model's chat template produces (no generation prompt), and returns, for each message, the
character span of the turn the template wrote for it. The loss mask is computed from those spans, never by
searching the text, so control text inside a message's content cannot open, close or move supervision.

    >>> from sftpack.render import get_renderer
    >>> r = get_renderer("qwen3_5")([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}])
    >>> r.text
    '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nYo<|im_end|>\\n'
    >>> r.turns[1]
    Turn(message=1, role='assistant', start=30, body=52, end=84)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple


class TemplateError(ValueError):
    """The chat template refuses the conversation (the Jinja template would raise)."""


class Turn(NamedTuple):
    """Where the template wrote one message.

    ``text[start:body]`` is the turn header (e.g. ``<|im_start|>assistant\\n``), ``text[body:end]`` the rest
    of the turn through its end-of-turn marker and the separator the template writes after it (e.g.
    ``...<|im_end|>\\n``). ``message`` is the index of the message in the conversation.
    """

    message: int
    role: str
    start: int
    body: int
    end: int


@dataclass(frozen=True)
class Rendered:
    text: str
    turns: tuple[Turn, ...]


Renderer = Callable[[list], Rendered]


def get_renderer(family: str) -> Renderer:
    """The native renderer of a template family (``qwen3_5``, ``gemma4``, ``kimi_k25``)."""
    if family == "qwen3_5":
        from .qwen3_5 import render
    elif family == "gemma4":
        from .gemma4 import render
    elif family == "kimi_k25":
        from .kimi import render
    else:
        raise KeyError(f"no native renderer for template family {family!r}")
    return render
