"""Row text for a terminal: escaping what must not reach it as is, and the coloured or bracketed rendering of
supervised spans, conversation boundaries and EOS tokens that ``inspect`` and ``diff`` print."""

from __future__ import annotations

import re

# What a row's text must not bring to the terminal as is: control characters (ESC sequences clear the screen,
# set the title, make links; CR overwrites a line), bidirectional overrides, line separators - and the marker
# characters, so that content can never pass for a supervised span or an EOS. Shown as \x1b, \u27e6, ...
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069⟦⟧⟨⟩]")


def escape(text: str) -> str:
    r"""Text safe to print: see ``_UNSAFE``.

    >>> escape("ok\tfine\n\x1b[2J⟦fake⟧")
    'ok\tfine\n\\x1b[2J\\u27e6fake\\u27e7'
    """
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


ANSI = {"supervised": "\x1b[1;32m", "boundary": "\x1b[1;36m", "eos": "\x1b[7;35m", "dim": "\x1b[2m", "reset": "\x1b[0m"}


def paint(text: str, style: str, color: bool) -> str:
    return f"{ANSI[style]}{text}{ANSI['reset']}" if color else text


def render_segments(segments, color: bool, heading, text: str = "", mark=None) -> str:
    """Decoded ``segments`` (from ``row_segments``) as text, content and ids through ``escape``: a boundary line
    ``── conversation ID (DETAIL) ──`` before a segment for which ``heading(segment)`` gives ``(id, detail)``
    (detail may be empty), each EOS on a line of its own as ``⟨EOS …⟩``, supervised runs green or in ``⟦…⟧``,
    an id the tokenizer does not know as ``⟨id N: not in the tokenizer⟩``; ``mark = (position, text)`` paints
    ``text`` before the segment that starts there. One renderer for inspect and diff, so that row content
    reaches the terminal escaped in both."""

    def newline(text: str) -> str:
        return text if not text or text.endswith("\n") else text + "\n"

    for seg in segments:
        if mark is not None and seg["start"] == mark[0]:
            text += paint(mark[1], "boundary", color)
        head = heading(seg) if seg["kind"] == "conversation" else None
        if head is not None:
            conversation, detail = head
            line = f"── conversation {escape(str(conversation))}" + (f" ({detail})" if detail else "") + " ──"
            text = newline(text) + paint(line, "boundary", color) + "\n"
        shown = escape(seg["text"]) if "unknown_id" not in seg else f"⟨id {seg['unknown_id']}: not in the tokenizer⟩"
        if seg["kind"] == "eos":
            text = newline(text) + paint(f"⟨EOS {shown}⟩", "eos", color) + "\n"
        elif seg["supervised"]:
            text += paint(shown, "supervised", color) if color else f"{SUPERVISED_OPEN}{shown}{SUPERVISED_CLOSE}"
        else:
            text += shown
    return text


SUPERVISED_OPEN, SUPERVISED_CLOSE = "⟦", "⟧"
