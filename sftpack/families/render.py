"""Render a conversation to text, remembering where every turn was written.

A renderer turns ``messages`` (a validated list of ``{"role", "content"[, "step_loss_mask"]}``) into the
exact text the model's chat template produces (no generation prompt), and returns, for each message, the
character span of the turn the template wrote for it. The loss mask is computed from those spans, never by
searching the text, so control text inside a message's content cannot open, close or move supervision.

    >>> from sftpack.families.registry import get_renderer
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


def last_query_index(messages: list, strip: bool) -> int | None:
    """Where the Qwen templates find the last query: the last user message that is not a bare tool response
    (``<tool_response>...</tool_response>``, tested on the stripped content when ``strip``); None if there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] == "user":
            content = message["content"].strip() if strip else message["content"]
            if not (content.startswith("<tool_response>") and content.endswith("</tool_response>")):
                return index
    return None


def split_reasoning(content: str) -> tuple[str, str]:
    """The chat templates' split of an assistant content at ``</think>`` (Qwen3, Qwen3.5, GLM, MiniMax), step for
    step: reasoning is the text before the first ``</think>`` after the last ``<think>`` in it, outer newlines
    removed; the answer is the text after the last ``</think>``, leading newlines removed. No ``</think>``:
    ``("", content)``.

    >>> split_reasoning("<think>\\nhm\\n</think>\\n\\nYo"), split_reasoning("Yo")
    (('hm', 'Yo'), ('', 'Yo'))
    """
    if "</think>" not in content:
        return "", content
    reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
    return reasoning, content.split("</think>")[-1].lstrip("\n")


def tool_result_turns(messages: list, index: int, header: str, body: str, close: str,
                      first_opens: bool = False) -> tuple[str, str]:
    """Message ``index`` (role ``tool``) as its part of the one turn consecutive tool results share: ``header``
    before the first of them (the first message of all too when ``first_opens``), ``close`` after the last.

    >>> m = [{"role": "user"}, {"role": "tool"}, {"role": "tool"}]
    >>> tool_result_turns(m, 1, "<u>", "r1", "</u>"), tool_result_turns(m, 2, "<u>", "r2", "</u>")
    (('<u>', 'r1'), ('', 'r2</u>'))
    """
    before = messages[index - 1]["role"] if index else None
    after = messages[index + 1]["role"] if index + 1 < len(messages) else None
    opens = before != "tool" if index else first_opens
    return (header if opens else ""), body + (close if after != "tool" else "")


class TurnWriter:
    """The bookkeeping every renderer shares: text written so far and where each turn lies in it.

        >>> w = TurnWriter("<s>")
        >>> w.turn(0, "user", "U:", "hi\\n")
        >>> w.rendered()
        Rendered(text='<s>U:hi\\n', turns=(Turn(message=0, role='user', start=3, body=5, end=8),))
    """

    def __init__(self, prefix: str = ""):
        self._parts = [prefix]  # a prefix (Gemma's <bos>) belongs to no turn
        self._turns: list[Turn] = []
        self._pos = len(prefix)

    def turn(self, message: int, role: str, header: str, body: str) -> None:
        """Write message ``message``'s turn: ``header`` then ``body`` (through its end marker and separator)."""
        start, body_start = self._pos, self._pos + len(header)
        self._pos = body_start + len(body)
        self._parts += (header, body)
        self._turns.append(Turn(message, role, start, body_start, self._pos))

    def rendered(self) -> Rendered:
        return Rendered("".join(self._parts), tuple(self._turns))


