"""The ShareGPT shape (``conversations: [{from, value}]``) read as Tulu 3's (``messages: [{role, content}]``).

``from`` names map to roles by :data:`ROLE_MAP` (the build record lists it); ``function_call`` (a JSON call
``{name, arguments}``, or a list of them) becomes an assistant message with ``tool_calls`` and ``observation`` a
``tool`` message (:func:`tool_turns`); the row's ``tools`` (a list or a JSON string of function schemas, bare or
``{type: "function", function}``) become the conversation's. Any other ``from`` is kept as it is, so the conversation
is skipped as ``unknown_role`` and counted, exactly as a Tulu row with that role would be.

    >>> sharegpt_messages([{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}])
    [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Yo'}]
    >>> tool_turns([{"role": "function_call", "content": '{"name": "f", "arguments": {"x": 1}}'},
    ...             {"role": "observation", "content": "2"}])
    [{'role': 'assistant', 'content': '', 'tool_calls': [{'type': 'function', 'function': {'name': 'f', \
'arguments': {'x': 1}}}]}, {'role': 'tool', 'content': '2'}]
"""

from __future__ import annotations

import json

import pyarrow as pa

from sftpack.base.arguments import argument
from sftpack.base.errors import UsageError

COLUMN = "conversations"
ROLE_MAP = {"human": "user", "gpt": "assistant", "system": "system", "user": "user", "assistant": "assistant"}


def missing_column(where: str, found: list[str], sharegpt: bool) -> str:
    """The one line for a source without the column its shape needs: what it has, what was expected."""
    if sharegpt:
        return (f"source {where}: no `{COLUMN}` column (found: {', '.join(found) or 'nothing'}); "
                f"{argument('sharegpt', True)} expects ShareGPT's `{COLUMN}: [{{from, value}}]`")
    hint = (f"; for ShareGPT's `{COLUMN}: [{{from, value}}]` pass {argument('sharegpt', True)}"
            if COLUMN in found else "")
    return (f"source {where}: no `messages` column (found: {', '.join(found) or 'nothing'}); expected Tulu 3's schema: "
            f"id, messages [{{role, content}}], source{hint}")


TOOL_ROLES = ("function_call", "observation")  # ShareGPT's tool turns (LLaMA-Factory's names)


def tool_turns(messages: list) -> list:
    """ShareGPT's ``function_call`` and ``observation`` turns as an assistant message's ``tool_calls`` and a ``tool``
    message; a call that is not JSON is left for the conversation checks to name (``tool_calls_invalid``)."""
    out = []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role == "observation":
            m = {**m, "role": "tool"}
        elif role == "function_call":
            m = {**m, "role": "assistant", "content": "", "tool_calls": _calls(m.get("content"))}
        out.append(m)
    return out


def _calls(value):
    try:
        calls = json.loads(value) if isinstance(value, str) else value
    except (ValueError, RecursionError):
        return value  # refused by the checks, named
    calls = calls if isinstance(calls, list) else [calls]
    return [{"type": "function", "function": c} if isinstance(c, dict) and "function" not in c else c for c in calls]


def sharegpt_tools(tools):
    """A row's ``tools`` as function schemas ``{type: "function", function}`` (LLaMA-Factory writes them bare, as a
    JSON string); anything else is returned as it is, for the checks to name."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except (ValueError, RecursionError):
            return tools
    if not isinstance(tools, list):
        return tools
    return [{"type": "function", "function": t} if isinstance(t, dict) and "function" not in t else t for t in tools]


def sharegpt_messages(conversation):
    """One row's ``conversations`` as ``messages``; anything that is not a list of objects is returned as it
    is, so that the conversation checks name what is wrong with it."""
    if not isinstance(conversation, list):
        return conversation
    out = []
    for turn in conversation:
        if not isinstance(turn, dict):
            out.append(turn)
            continue
        message = {k: v for k, v in turn.items() if k not in ("from", "value")}
        if "from" in turn:
            who = turn["from"]
            message["role"] = ROLE_MAP.get(who, who) if isinstance(who, str) else who
        if "value" in turn:
            message["content"] = turn["value"]
        out.append(message)
    return tool_turns(out)


def sharegpt_table(table: pa.Table, where: str) -> pa.Table:
    """An Arrow table whose ``conversations`` column (list of struct{from, value}) becomes ``messages`` (list of
    struct{role, content}); the other columns are kept. The new column is built in memory."""
    if COLUMN not in table.column_names:
        raise UsageError(missing_column(where, table.column_names, sharegpt=True))
    if "messages" in table.column_names:
        raise UsageError(f"source {where}: it has both `messages` and `{COLUMN}`; {argument('sharegpt', True)} "
                         f"reads `{COLUMN}` and would hide `messages`")
    column = table.column(COLUMN)
    kind = column.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) or not pa.types.is_struct(kind.value_type):
        raise UsageError(f"source {where}: column `{COLUMN}` is {kind}, not a list of {{from, value}} objects")
    names = [kind.value_type.field(i).name for i in range(kind.value_type.num_fields)]
    missing = [n for n in ("from", "value") if n not in names]
    if missing:
        raise UsageError(f"source {where}: the `{COLUMN}` entries have fields {', '.join(names)}; "
                         f"{' and '.join(missing)} missing (ShareGPT: from, value)")
    # imported here, where it is used: at the top it added about 0.05 s to every build's start-up
    import pyarrow.compute as pc

    lists = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    turns = pc.list_flatten(lists)
    who = pc.cast(turns.field("from"), pa.string())
    keys = pa.array(list(ROLE_MAP), pa.string())
    mapped = pc.take(pa.array(list(ROLE_MAP.values()), pa.string()), pc.index_in(who, value_set=keys))
    role = pc.if_else(pc.is_null(mapped), who, mapped)
    content = turns.field("value")
    structs = pa.StructArray.from_arrays([role, content], names=["role", "content"], mask=pc.is_null(turns))
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    offsets = pa.array([0, *lengths.cumsum().tolist()], pa.int64() if pa.types.is_large_list(kind) else pa.int32())
    array_type = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
    messages = array_type.from_arrays(offsets, structs, mask=pc.is_null(lists))
    index = table.column_names.index(COLUMN)
    return table.remove_column(index).add_column(index, "messages", messages)
