"""Check one source conversation against docs/spec.md, "Packing", item 2, and keep only the keys that count.

    >>> check_messages([{"role": "user", "content": "Hi", "extra": 1}, {"role": "assistant", "content": "Yo"}])
    [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Yo'}]
    >>> check_messages([{"role": "assistant", "content": "Yo"}])
    Traceback (most recent call last):
    ...
    sftpack.families.conversation.Skip: no_user_message: no message has role 'user'
"""

from __future__ import annotations

ROLES = ("system", "user", "assistant")

# Every reason a conversation can be skipped for, in the order they are checked (the build record counts them).
SKIP_REASONS = {
    "invalid_json": "a JSONL line that is not valid JSON",
    "row_not_object": "a source row that is not an object",
    "messages_missing": "the row has no `messages` field (or it is null)",
    "messages_not_list": "`messages` is not a list",
    "messages_empty": "`messages` is an empty list",
    "message_not_object": "a message is not an object",
    "message_missing_role": "a message has no `role`",
    "message_missing_content": "a message has no `content`",
    "unknown_role": "a role other than system, user, assistant",
    "content_not_string": "a message's `content` is null, a number, a list of parts, ...",
    "system_not_first": "a system message that is not the first message",
    "no_user_message": "no message has role 'user'",
    "no_assistant_message": "no message has role 'assistant'",
    "invalid_unicode": "text the tokenizer cannot encode (e.g. a lone surrogate), or strings that are not UTF-8",
    "step_loss_mask_invalid": "a message's `step_loss_mask` is not 0, 1, true, false or null (\"1\", 2, [1])",
    "id_not_string": "the row's `id` is neither a string nor an integer (true, 1.5, a list, an object)",
    "id_reserved": "the row's `id` starts with `sftpack:`, kept for the ids sftpack gives rows without one",
    "template_error": "the chat template raises on the conversation, or its turns cannot be placed",
    "rendered_too_large": "the rendered conversation passes the cap on its characters (encode.MAX_RENDERED_CHARS)",
}


class Skip(Exception):
    """The conversation is skipped; ``reason`` is a key of :data:`SKIP_REASONS`, ``detail`` names the field."""

    def __init__(self, reason: str, detail: str):
        if reason not in SKIP_REASONS:  # a new reason must be documented (and counted) before it is used
            raise ValueError(f"unknown skip reason {reason!r} (known: {', '.join(SKIP_REASONS)})")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def check_messages(messages) -> list[dict]:
    """The conversation reduced to ``role``, ``content`` and ``step_loss_mask``, or :class:`Skip`."""
    if messages is None:
        raise Skip("messages_missing", "`messages` is missing")
    if not isinstance(messages, list):
        raise Skip("messages_not_list", f"`messages` is a {type(messages).__name__}")
    if not messages:
        raise Skip("messages_empty", "`messages` is empty")
    clean = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise Skip("message_not_object", f"messages[{i}] is a {type(message).__name__}")
        role = message.get("role")
        if role is None:
            raise Skip("message_missing_role", f"messages[{i}].role is missing")
        if "content" not in message:
            raise Skip("message_missing_content", f"messages[{i}].content is missing")
        if role not in ROLES:
            raise Skip("unknown_role", f"messages[{i}].role is {role!r}")
        content = message["content"]
        if not isinstance(content, str):
            raise Skip("content_not_string", f"messages[{i}].content is {type(content).__name__}")
        if role == "system" and i != 0:
            raise Skip("system_not_first", f"messages[{i}] is a system message")
        kept = {"role": role, "content": content}
        flag = message.get("step_loss_mask")
        if flag is not None:
            # anything else would silently leave the turn unsupervised (slime trains only where it equals 1)
            if not isinstance(flag, (bool, int, float)) or flag not in (0, 1):
                raise Skip("step_loss_mask_invalid", f"messages[{i}].step_loss_mask is {flag!r}")
            kept["step_loss_mask"] = flag
        clean.append(kept)
    roles = [m["role"] for m in clean]
    if "user" not in roles:
        raise Skip("no_user_message", "no message has role 'user'")
    if "assistant" not in roles:
        raise Skip("no_assistant_message", "no message has role 'assistant'")
    return clean
