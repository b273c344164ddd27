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

import json
from dataclasses import dataclass
from typing import Callable

from sftpack.families.conversation import FIELDS, Conversation, Skip
from sftpack.families.render import Renderer, TemplateError

MARK = "\ue001field\ue001"  # a private-use text no template writes by itself
TOOL_FIELDS = frozenset(("tool_calls", "tool_results"))


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
    template_primary: bool = False  # the encoder's renderer is the template itself (the Jinja path)
    refused: str = ""  # why the Jinja path's rule cannot be trusted with tool conversations (:func:`tool_span_check`)

    def renderer(self, render: Renderer, conversation: Conversation) -> Callable:
        """``messages -> Rendered`` for ``conversation``: ``render`` itself, or the fallback; or :class:`Skip`."""
        if not conversation.fields:  # role and content alone (the common case)
            return render
        extra = conversation.fields - self.native - self.unrendered
        takes_tools = self.native_tools
        if extra:
            if self.fallback is None:
                raise Skip("needs_template", f"the native {self.family} renderer does not write "
                                             f"{', '.join(sorted(extra))} and the tokenizer has no chat template")
            render, takes_tools = self.fallback, True
        if self.refused and (extra or self.template_primary) and conversation.fields & TOOL_FIELDS:
            raise Skip("template_error", self.refused)
        if conversation.tools and takes_tools:
            return lambda messages: render(messages, tools=conversation.tools)
        return render

    def notes(self, conversation: Conversation) -> tuple[str, ...]:
        """``unrendered_fields:FIELD`` for each field the conversation uses that the template does not write,
        ``unknown_fields:KEY`` for each message key sftpack does not know, and ``through_template`` when the
        tokenizer's template rendered it in place of the native renderer."""
        if not conversation.fields and not conversation.unknown:
            return ()
        through = conversation.fields - self.native - self.unrendered and self.fallback is not None
        return (tuple(f"unrendered_fields:{f}" for f in sorted(conversation.fields & self.unrendered))
                + tuple(f"unknown_fields:{k}" for k in conversation.unknown) + (("through_template",) if through else ()))


EXAMPLE_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
EXAMPLE_RESULT = '{"temperature": 18}'
EXAMPLE = [  # what a rule's description shows: reasoning, a call, its result, an answer
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "I should call the tool.",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": EXAMPLE_RESULT},
    {"role": "assistant", "content": "It is 18 degrees.", "reasoning_content": "The tool answered."},
]


def tool_battery() -> list[tuple[str, Conversation]]:
    """Tool conversations a rule is proved on where its template writes tool calls or reasoning: a call in the first,
    a middle and the last turn, parallel calls with consecutive results, a call with content, a result last, a user
    after a result, reasoning in earlier turns; checked as a build checks them."""
    from sftpack.families.conversation import check_conversation

    u, t = (lambda c: {"role": "user", "content": c}), (lambda c, id: {"role": "tool", "content": c, "tool_call_id": id})

    def a(content, reasoning=None, *calls):
        return {"role": "assistant", "content": content, **({"reasoning_content": reasoning} if reasoning else {}),
                **({"tool_calls": [{"id": id, "type": "function", "function": {
                    "name": "get_weather", "arguments": {"city": city}}} for id, city in calls]} if calls else {})}

    paris, lyon = ("call_1", "Paris"), ("call_2", "Lyon")
    conversations = {
        "tool call first": EXAMPLE,
        "tool call middle": [{"role": "system", "content": "Be brief."}, u("hi"), a("hello"), u("Paris, then Lyon?"),
                             a("", "Paris first.", paris), t("18C", "call_1"), a("", "Now Lyon.", lyon),
                             t("21C", "call_2"), a("18C and 21C.", "Both back.")],
        "tool call last": [u("Paris?"), a("", "Call it.", paris)],
        "parallel calls, consecutive results": [u("Paris and Lyon?"), a("", "Two cities.", paris, lyon),
                                                t("18C", "call_1"), t("21C", "call_2"), a("18C, 21C.", "Both.")],
        "call with content": [u("Paris?"), a("Looking it up.", None, paris), t("18C", "call_1"), a("18C.")],
        "tool result last": [u("Paris?"), a("", "Call it.", paris), t("18C", "call_1")],
        "user after a result": [u("Paris?"), a("", "Call it.", paris), t("18C", "call_1"), a("18C."), u("Thanks!"),
                                a("You are welcome.", "Polite.")],
        "reasoning in earlier turns": [u("1"), a("one", "r1"), u("2"), a("two", "r2"), u("3"), a("three", "r3")],
    }
    return [(name, check_conversation({"messages": m, "tools": EXAMPLE_TOOLS})) for name, m in conversations.items()]


def describe_fields(render) -> list[str]:
    """How a rule supervises reasoning, tool calls and tool results on ``render``'s template (a
    :class:`~sftpack.families.jinja.JinjaRenderer`): which fields the template writes, what is supervised of
    :data:`EXAMPLE` (without its reasoning where the Jinja path cannot place it), and of reasoning in earlier turns;
    one line each, for ``new-model``'s printed rule."""
    from sftpack.families.mask import close_final_turn, supervised_spans

    written = written_fields(render.text_of)
    lines = ["message fields the template writes: " + (", ".join(sorted(written)) or "none beyond role and content"),
             "and writes nothing of (counted as unrendered_fields): " + (", ".join(sorted(set(FIELDS) - written)) or "none")]
    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in EXAMPLE]
    for conversation in (EXAMPLE, plain):
        try:
            rendered = close_final_turn(render(conversation, EXAMPLE_TOOLS), render.rule)
            break
        except TemplateError as e:
            lines.append(f"a tool conversation {'with' if conversation is EXAMPLE else 'without'} reasoning cannot be "
                         f"placed ({e}): such conversations are skipped (template_error)")
    else:
        return lines
    text = rendered.text
    spans = supervised_spans(rendered, conversation, render.rule)
    lines += [f"supervised, turn {k + 1} of a tool conversation: {text[a:b]!r}" for k, (a, b) in enumerate(spans)]
    refused = tool_span_check(render)
    if refused:
        lines.append(f"WARNING: {refused}; a build skips tool conversations (template_error) until end_of_turn has it")
    else:
        lines.append("tool results, the tools block, system and user text: never supervised")
    return lines + _reasoning_lines(render)


def _reasoning_lines(render) -> list[str]:
    """Whether the reasoning of an answer a later user message follows is written, and supervised."""
    from sftpack.families.mask import RuleMismatch, close_final_turn, supervised_spans

    earlier, last = "Earlier reasoning.", "Last reasoning."
    messages = [{"role": "user", "content": "1"}, {"role": "assistant", "content": "one", "reasoning_content": earlier},
                {"role": "user", "content": "2"}, {"role": "assistant", "content": "two", "reasoning_content": last}]
    try:
        rendered = close_final_turn(render(messages), render.rule)
        spans = supervised_spans(rendered, messages, render.rule)
    except (TemplateError, RuleMismatch) as e:
        return [f"a conversation with reasoning in two answers cannot be placed ({e}): skipped (template_error)"]
    supervised = [rendered.text[a:b] for a, b in spans]

    def state(reasoning: str, turn: str) -> str:
        if reasoning in turn:
            return "supervised"
        return "written, not supervised" if reasoning in rendered.text else "dropped by the template"

    return [f"reasoning of the last answer: {state(last, supervised[-1])}; of an answer a later user message "
            f"follows: {state(earlier, supervised[0])}"]


def tool_span_check(render) -> str:
    """Why ``render`` (the template through Jinja, turns placed by its rule) cannot be trusted with tool
    conversations, or ``""``: on :data:`EXAMPLE` and its parts, no tool result, user or system text may fall inside a
    supervised span (a rule inferred from text conversations alone may not know the marker that closes a turn
    calling a tool: GLM's ``<|observation|>``)."""
    from sftpack.families.mask import RuleMismatch, close_final_turn, supervised_spans

    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in EXAMPLE]  # harmony places these
    for conversation in (EXAMPLE, EXAMPLE[:3], [*EXAMPLE[:3], *EXAMPLE[2:]], plain, plain[:3]):
        try:
            rendered = close_final_turn(render(conversation, EXAMPLE_TOOLS), render.rule)
            spans = supervised_spans(rendered, conversation, render.rule)
        except (TemplateError, RuleMismatch):
            continue  # the template refuses the conversation: a build skips such conversations anyway
        for m in conversation:
            written = {m["content"], json.dumps(m["content"])[1:-1]}  # as it is, or inside a JSON string (harmony)
            if m["role"] != "assistant" and any(w in rendered.text[a:b] for a, b in spans for w in written):
                return (f"rule {render.rule.name!r} would supervise a {m['role']} message of a tool conversation: its "
                        "end_of_turn misses the marker that closes a turn calling a tool")
    return ""
