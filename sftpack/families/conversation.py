"""Check one source conversation against docs/spec.md, "Packing", item 2: the message schema, each field checked,
each problem a counted skip reason.

A conversation is a list of messages, or ``{"messages": [...], "tools": [...]}`` when it brings function schemas.
A message is ``role`` (system, user, assistant, tool, developer), ``content`` (a string or a list of text parts),
and optionally ``step_loss_mask``, reasoning (``reasoning_content``, or the aliases ``thinking`` / ``reasoning``),
``tool_calls`` (``[{id, type: "function", function: {name, arguments}}]``, arguments an object or a JSON string),
``tool_call_id`` and ``name``. The checked messages hold only those, normalised: content a string, reasoning as
``reasoning_content``, arguments an object. Keys sftpack does not know are listed (:attr:`Conversation.unknown`).

    >>> check_messages([{"role": "user", "content": "Hi", "extra": 1}, {"role": "assistant", "content": "Yo"}])
    [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Yo'}]
    >>> check_messages([{"role": "assistant", "content": "Yo"}])
    Traceback (most recent call last):
    ...
    sftpack.families.conversation.Skip: no_user_message: no message has role 'user'
    >>> c = check_conversation({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
    ...     {"role": "assistant", "thinking": "hm", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]})
    >>> c.messages[1], sorted(c.fields)
    ({'role': 'assistant', 'content': '', 'reasoning_content': 'hm', 'tool_calls': [{'type': 'function', \
'function': {'name': 'f', 'arguments': {}}}]}, ['reasoning_content', 'tool_calls'])
"""

from __future__ import annotations

import json
from typing import NamedTuple

ROLES = ("system", "user", "assistant", "tool", "developer")
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")  # one field; the checked message names it the first way
KNOWN_KEYS = frozenset(("role", "content", "step_loss_mask", *REASONING_KEYS, "tool_calls", "tool_call_id", "name"))

# What a template may write or leave out, beyond role and content: a family declares which its renderer writes
# (sftpack.families.family.Family.fields), and a conversation using one nobody writes counts it as unrendered.
FIELDS = {
    "reasoning_content": "an assistant message's reasoning (reasoning_content, thinking, reasoning)",
    "tool_calls": "an assistant message's tool calls (their names and arguments)",
    "tool_call_ids": "the ids of tool calls (tool_calls[].id)",
    "tool_results": "messages with role tool",
    "tool_call_id": "a tool message's tool_call_id",
    "name": "a message's name",
    "tools": "the conversation's tools (function schemas)",
    "developer": "messages with role developer",
}

# Every reason a conversation can be skipped for, in the order they are checked (the build record counts them).
SKIP_REASONS = {
    "invalid_json": "a JSONL line that is not valid JSON",
    "row_not_object": "a source row that is not an object",
    "messages_missing": "the row has no `messages` field (or it is null)",
    "messages_not_list": "`messages` is not a list",
    "messages_empty": "`messages` is an empty list",
    "message_not_object": "a message is not an object",
    "message_missing_role": "a message has no `role`",
    "message_missing_content": "a message has no `content` (an assistant message with tool calls may have none)",
    "unknown_role": "a role other than system, user, assistant, tool, developer",
    "content_not_string": "a message's `content` is null, a number, an object, or a list holding a part that is not text",
    "reasoning_invalid": "reasoning (reasoning_content, thinking, reasoning) that is not a string, on a message that "
                         "is not an assistant's, or two of them that differ",
    "tool_calls_invalid": "`tool_calls` not a list of {function: {name, arguments}} on an assistant message, or "
                          "arguments neither an object nor a JSON string of one",
    "tool_call_id_invalid": "`tool_call_id` not a string, or on a message whose role is not tool",
    "name_invalid": "a message's `name` is not a string",
    "tools_invalid": "the conversation's `tools` is not a list of objects (or a JSON string of one)",
    "system_not_first": "a system message that is not the first message",
    "no_user_message": "no message has role 'user'",
    "no_assistant_message": "no message has role 'assistant'",
    "invalid_unicode": "text the tokenizer cannot encode (e.g. a lone surrogate), or strings that are not UTF-8",
    "step_loss_mask_invalid": "a message's `step_loss_mask` is not 0, 1, true, false or null (\"1\", 2, [1])",
    "id_not_string": "the row's `id` is neither a string nor an integer (true, 1.5, a list, an object)",
    "id_reserved": "the row's `id` starts with `sftpack:`, kept for the ids sftpack gives rows without one",
    "needs_template": "a field the family's native renderer does not write (say, tool calls), and the tokenizer has "
                      "no chat template to render it with",
    "template_error": "the chat template raises on the conversation, or its turns cannot be placed",
    "assistant_first": "an assistant message before any user message, rendered through the chat template (Jinja): no "
                       "prompt precedes what it supervises, and text the template writes before the first message "
                       "(a BOS, a default system prompt) belongs to no turn",
    "rendered_too_large": "the rendered conversation passes the cap on its characters (encode.MAX_RENDERED_CHARS)",
}


def assistant_first(messages: list) -> bool:
    """Whether an assistant message comes before any user message (rendered through a chat template, skipped)."""
    return next((m["role"] for m in messages if m["role"] in ("user", "assistant")), None) == "assistant"


class Skip(Exception):
    """The conversation is skipped; ``reason`` is a key of :data:`SKIP_REASONS`, ``detail`` names the field."""

    def __init__(self, reason: str, detail: str):
        if reason not in SKIP_REASONS:  # a new reason must be documented (and counted) before it is used
            raise ValueError(f"unknown skip reason {reason!r} (known: {', '.join(SKIP_REASONS)})")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Conversation(NamedTuple):
    """A checked conversation: its normalised ``messages``, its ``tools`` (None when it has none), the
    :data:`FIELDS` it uses, and the message keys sftpack does not know (sorted)."""

    messages: list
    tools: list | None
    fields: frozenset
    unknown: tuple


def check_messages(messages) -> list[dict]:
    """The conversation's checked messages, or :class:`Skip`."""
    return check_conversation(messages).messages


def check_conversation(conversation) -> Conversation:
    """A list of messages, or ``{"messages", "tools"}``, checked and normalised; or :class:`Skip`."""
    tools = None
    if isinstance(conversation, dict) and "messages" in conversation:
        tools = _tools(conversation.get("tools"))
        conversation = conversation.get("messages")
    if conversation is None:
        raise Skip("messages_missing", "`messages` is missing")
    if not isinstance(conversation, list):
        raise Skip("messages_not_list", f"`messages` is a {type(conversation).__name__}")
    if not conversation:
        raise Skip("messages_empty", "`messages` is empty")
    fields, unknown = set(), set()
    clean = [_message(i, message, fields, unknown) for i, message in enumerate(conversation)]
    roles = {m["role"] for m in clean}
    if "user" not in roles:
        raise Skip("no_user_message", "no message has role 'user'")
    if "assistant" not in roles:
        raise Skip("no_assistant_message", "no message has role 'assistant'")
    if tools:
        fields.add("tools")
    return Conversation(clean, tools, frozenset(fields) if fields else _NONE, tuple(sorted(unknown)) if unknown else ())


_NONE = frozenset()


_PLAIN_ROLES = frozenset(("user", "assistant", "system"))
_ROLE_IS = ".role is "


def role_named(detail: str) -> str:
    """The role an ``unknown_role`` skip's detail names: a string role as it is, any other value as written.

    >>> role_named("messages[2].role is 'chatgpt'"), role_named("messages[0].role is None")
    ('chatgpt', 'None')
    """
    import ast

    written = detail.partition(_ROLE_IS)[2] or detail
    try:
        value = ast.literal_eval(written)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return written[:60]
    return value[:60] if isinstance(value, str) else written[:60]  # a name, not a payload


def _message(i: int, message, fields: set, unknown: set) -> dict:
    # Tulu's {role, content}, the common case, checked in a few lookups (the full check took 4x as long per
    # conversation of the bundled sample: 36 against 8 µs)
    if type(message) is dict and len(message) == 2:
        role, content = message.get("role"), message.get("content")
        if type(content) is str and role in _PLAIN_ROLES and (i == 0 or role != "system"):
            return {"role": role, "content": content}
    if not isinstance(message, dict):
        raise Skip("message_not_object", f"messages[{i}] is a {type(message).__name__}")
    role = message.get("role")
    if role is None:
        raise Skip("message_missing_role", f"messages[{i}].role is missing")
    calls = message.get("tool_calls") or None  # an empty list calls nothing
    if "content" not in message and not (role == "assistant" and calls is not None):
        raise Skip("message_missing_content", f"messages[{i}].content is missing")
    if not isinstance(role, str) or role not in ROLES:
        raise Skip("unknown_role", f"messages[{i}]{_ROLE_IS}{role!r}")
    content = _content(i, message.get("content"), role == "assistant" and calls is not None)
    if role == "system" and i != 0:
        raise Skip("system_not_first", f"messages[{i}] is a system message")
    kept = {"role": role, "content": content}
    flag = message.get("step_loss_mask")
    if flag is not None:
        # anything else would silently leave the turn unsupervised (slime trains only where it equals 1)
        if not isinstance(flag, (bool, int, float)) or flag not in (0, 1):
            raise Skip("step_loss_mask_invalid", f"messages[{i}].step_loss_mask is {flag!r}")
        kept["step_loss_mask"] = flag
    reasoning = _reasoning(i, message, role)
    if reasoning is not None:
        kept["reasoning_content"] = reasoning
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise Skip("tool_calls_invalid", f"messages[{i}].tool_calls is {_what(calls)} on a {role} message")
        kept["tool_calls"] = [_tool_call(f"messages[{i}].tool_calls[{j}]", call) for j, call in enumerate(calls)]
    for key, reason, allowed in (("tool_call_id", "tool_call_id_invalid", role == "tool"), ("name", "name_invalid", True)):
        value = message.get(key)
        if value is not None:
            if not isinstance(value, str) or not allowed:
                raise Skip(reason, f"messages[{i}].{key} is {_what(value)} on a {role} message")
            kept[key] = value
    fields.update(_fields_of(kept))
    unknown.update(k for k, v in message.items() if k not in KNOWN_KEYS and v is not None)
    return kept


def _content(i: int, content, may_be_empty: bool) -> str:
    """A string, or a list of text parts joined (as the templates that take parts write them: one after the other)."""
    if isinstance(content, str):
        return content
    if content is None and may_be_empty:
        return ""
    if isinstance(content, list):
        texts = [part.get("text") if isinstance(part, dict) and part.get("type", "text") == "text" else None
                 for part in content]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
        raise Skip("content_not_string", f"messages[{i}].content holds a part that is not text")
    raise Skip("content_not_string", f"messages[{i}].content is {type(content).__name__}")


def _reasoning(i: int, message: dict, role: str) -> str | None:
    given = {key: message[key] for key in REASONING_KEYS if message.get(key) is not None}
    if not given:
        return None
    for key, value in given.items():
        if not isinstance(value, str) or role != "assistant":
            raise Skip("reasoning_invalid", f"messages[{i}].{key} is {_what(value)} on a {role} message")
    if len(set(given.values())) > 1:
        raise Skip("reasoning_invalid", f"messages[{i}] has {' and '.join(given)}, and they differ")
    return next(iter(given.values()))


def _tool_call(where: str, call) -> dict:
    """``{id?, type: "function", function: {name, arguments: object}}`` from the OpenAI shape or a flat
    ``{name, arguments}``."""
    if not isinstance(call, dict):
        raise Skip("tool_calls_invalid", f"{where} is {_what(call)}")
    function = call.get("function", call)
    if call.get("type", "function") != "function" or not isinstance(function, dict):
        raise Skip("tool_calls_invalid", f"{where} is not a function call")
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name:
        raise Skip("tool_calls_invalid", f"{where}.function.name is {_what(name)}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            raise Skip("tool_calls_invalid", f"{where}.function.arguments is a string that is not JSON") from None
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise Skip("tool_calls_invalid", f"{where}.function.arguments is {_what(arguments)}, not an object")
    if not _is_json(arguments):  # a table's timestamp or bytes: no template can write it
        raise Skip("tool_calls_invalid", f"{where}.function.arguments holds a value that is not JSON")
    out = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call.get("id") is not None:
        if not isinstance(call["id"], str):
            raise Skip("tool_calls_invalid", f"{where}.id is {_what(call['id'])}")
        out = {"id": call["id"], **out}
    return out


def _tools(tools) -> list | None:
    """The conversation's function schemas: a list of objects, or a JSON string of one (a table column)."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except (ValueError, RecursionError):
            raise Skip("tools_invalid", "`tools` is a string that is not JSON") from None
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise Skip("tools_invalid", f"`tools` is {_what(tools)}, not a list of objects")
    if not _is_json(tools):
        raise Skip("tools_invalid", "`tools` holds a value that is not JSON")
    return tools


def _is_json(value) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _fields_of(message: dict) -> list[str]:
    out = [key for key in ("reasoning_content", "tool_calls", "tool_call_id", "name") if key in message]
    if any("id" in call for call in message.get("tool_calls", ())):
        out.append("tool_call_ids")
    if message["role"] == "tool":
        out.append("tool_results")
    elif message["role"] == "developer":
        out.append("developer")
    return out


def _what(value) -> str:
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)
