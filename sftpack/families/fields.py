"""Which renderer writes a conversation's fields, and which fields no renderer writes (counted, never dropped).

A family's native renderer handles some message fields exactly as its official template does
(:attr:`~sftpack.families.family.Family.fields`); a conversation using another goes through the tokenizer's own
template (the Jinja path), or is skipped (``needs_template``) when the tokenizer has none. A field the template
itself writes nothing of is counted per conversation in the build record (``unrendered_fields``), with one
warning, and refused by ``--strict``. Which fields a template writes is found by rendering it: a unique text in one
field at a time, looked for in the output.

    >>> from sftpack.families.qwen3_5 import render
    >>> sorted(written_fields(lambda messages, tools: render(messages, tools).text))
    ['reasoning_content', 'tool_calls', 'tool_results', 'tools']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sftpack.families.conversation import FIELDS, Conversation, Skip
from sftpack.families.render import Renderer, TemplateError

MARK = "\ue001field\ue001"  # a private-use text no template writes by itself


def _call(name: str, id: str | None = None, argument: str = "v") -> dict:
    out = {"type": "function", "function": {"name": name, "arguments": {"x": argument}}}
    return {"id": id, **out} if id else out


def field_probes() -> list[tuple[str, list, list | None]]:
    """Conversations with ``MARK`` in one field alone: ``(field, messages, tools)``; a field has more than one where
    templates write it in some places only (Kimi keeps reasoning after the last answer without tool calls)."""
    user, answer = {"role": "user", "content": "q"}, {"role": "assistant", "content": "done"}
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}

    def calling(call=None, result=None):
        return [user, {"role": "assistant", "content": "", "tool_calls": [call or _call("f")]},
                {"role": "tool", "content": "r", **(result or {})}, answer]

    marked_tool = {"type": "function", "function": {**tool["function"], "name": MARK}}
    reasoned = calling()
    reasoned[1] = {**reasoned[1], "reasoning_content": MARK}
    return [
        ("reasoning_content", [user, {"role": "assistant", "content": "a", "reasoning_content": MARK}], None),
        ("reasoning_content", reasoned, [tool]),
        ("reasoning_content", reasoned[:2], [tool]),
        ("tool_calls", calling(_call(MARK, argument=MARK)), [tool]),
        ("tool_call_ids", calling(_call("f", MARK)), [tool]),
        ("tool_results", calling(None, {"content": MARK}), [tool]),
        ("tool_call_id", calling(None, {"tool_call_id": MARK}), [tool]),
        ("name", calling(None, {"name": MARK})[:2] + [{"role": "user", "content": "q", "name": MARK}, answer], [tool]),
        ("tools", [user, answer], [marked_tool]),
        ("developer", [{"role": "developer", "content": MARK}, user, answer], None),
    ]


def written_fields(text_of: Callable[[list, list | None], str]) -> frozenset:
    """The fields a renderer (``(messages, tools) -> text``) writes something of; one it raises on is not written."""
    written = set()
    for field, messages, tools in field_probes():
        try:
            if MARK in text_of(messages, tools):
                written.add(field)
        except TemplateError:
            continue
    return frozenset(written)


@dataclass(frozen=True)
class FieldRouting:
    """``native``: the fields the encoder's renderer handles; ``fallback``: the renderer of conversations using other
    fields (the tokenizer's template through Jinja; None: such a conversation is skipped); ``unrendered``: the fields
    the template writes nothing of; ``native_tools``: whether the renderer takes ``tools=``; ``family``: its name."""

    native: frozenset = frozenset(FIELDS)
    fallback: Renderer | None = None
    unrendered: frozenset = frozenset()
    native_tools: bool = True
    family: str = ""

    def renderer(self, render: Renderer, conversation: Conversation) -> Callable:
        """``messages -> Rendered`` for ``conversation``: ``render`` itself, or the fallback; or :class:`Skip`."""
        extra = conversation.fields - self.native - self.unrendered
        takes_tools = self.native_tools
        if extra:
            if self.fallback is None:
                raise Skip("needs_template", f"the native {self.family} renderer does not write "
                                             f"{', '.join(sorted(extra))} and the tokenizer has no chat template")
            render, takes_tools = self.fallback, True
        if conversation.tools and takes_tools:
            return lambda messages: render(messages, tools=conversation.tools)
        return render

    def notes(self, conversation: Conversation) -> tuple[str, ...]:
        """``unrendered_fields:FIELD`` for each field the conversation uses that the template does not write, and
        ``unknown_fields:KEY`` for each message key sftpack does not know."""
        return (tuple(f"unrendered_fields:{f}" for f in sorted(conversation.fields & self.unrendered))
                + tuple(f"unknown_fields:{k}" for k in conversation.unknown))
