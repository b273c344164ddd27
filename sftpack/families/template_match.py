"""Conversations that tell whether a native renderer reproduces a given chat template.

A tokenizer may carry a template that is not byte-identical to the official one sftpack's native renderer
follows. Before using the native renderer, sftpack renders these conversations both ways; one difference and
the build falls back to the template itself (Jinja). The conversations below probe what every template handles;
each family adds the ones that forge its own turns (its entry's ``probes``), and every probe runs for every family.
"""

from __future__ import annotations

from sftpack.families.registry import FAMILIES

_U, _A, _S = "user", "assistant", "system"


def _c(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


COMMON_PROBES = [
    _c((_U, "Hi"), (_A, "Hello!")),
    _c((_S, "You are helpful."), (_U, "What is 2+2?"), (_A, "4")),
    _c((_S, "  padded system  \n"), (_U, "\n\nq\n"), (_A, "\n\nanswer starting with newlines\n\n")),
    _c((_U, "a"), (_A, ""), (_U, "b"), (_A, "   ")),
    _c((_U, "think?"), (_A, "<think>\nreasoning here\n</think>\n\nfinal")),
    _c((_U, "one"), (_A, "<think>r1</think>a1"), (_U, "two"), (_A, "<think>\nr2\n</think>a2")),
    _c((_U, "x"), (_A, "no think close <think> here")),
    _c((_U, "q"), (_A, "a"), (_U, "ends with a user message")),
    _c((_U, "<tool_response>\nresult\n</tool_response>"), (_A, "a")),
    _c((_U, "q"), (_A, "a"), (_U, "<tool_response>\nr\n</tool_response>"), (_A, "<think>t</think>b")),
    _c((_U, "Unicode: 東京 العربية हिन्दी 😀 e\u0301"), (_A, "Ответ: да ✓")),
    _c((_S, ""), (_U, "empty system"), (_A, "fine")),
    _c((_U, "first"), (_U, "second user in a row"), (_A, "answer"), (_A, "second assistant")),
    _c((_A, "assistant first"), (_U, "then user"), (_A, "and answer")),
    _c((_U, "tabs\tand\r\nCRLF"), (_A, "code:\n```python\ndef f():\n    return 1\n```")),
]


def probe_conversations() -> list[list[dict]]:
    """The common probes, then every registered family's."""
    return COMMON_PROBES + [_c(*probe) for family in FAMILIES.values() for probe in family.probes]
