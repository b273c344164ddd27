"""Jinja fallback: render with the tokenizer's own chat template, for templates no native renderer matches.

Turns are located without trusting message content: each message's content is rendered a second time with
the rule's control markers (:func:`turn_markers`: ``<|im_start|>``, ``<|im_end|>``, or plain-text role markers such
as ``User:``) replaced by same-length filler - and so is a
piece of a marker at either end of the content, which the template's own text beside it could complete (MiniMax's
``[e~[`` overlaps itself: content ending in ``[e~`` followed by the template's ``[e~[`` holds an earlier
``[e~[``) - and the turns are found in that sanitized text. A turn ends at the first end marker followed by the
rule's separator. A template whose output changes length when content changes that way is refused
(``TemplateError``) rather than guessed; a turn that still cannot be placed, or a header outside every placed turn
(a turn no message was given: one message written under two headers), is :class:`TurnNotFound`. A template
that rewrites content into a marker (``replace('@@END@@', '<|im_end|>')``) would place a turn where content says:
it is refused when compiled (:class:`ControlTextRewrite`). The proof of a rule and the build use this one renderer,
so what a proof showed unforgeable stays so at build.

The template writes at most ``max_chars`` characters per conversation: it is stopped as it writes past that
(:class:`RenderTooLarge`), so that a template looping over its input cannot exhaust memory.
"""

from __future__ import annotations

import os
import re

from sftpack.families.profiles import MaskRule
from sftpack.families.render import Rendered, TemplateError, Turn
from sftpack.families.template_vars import CLOCKS

MARKER = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]|\][^\s\[\]]*\[")  # <|im_end|>, [EOS], ]~b] / [e~[: one token each
REASONING_MARKERS = ("<think>", "</think>")  # content semantics: templates split reasoning off at them
# Characters of one rendered conversation (a Tulu conversation has well under 10^5): beyond it the conversation is a
# counted skip, and a template is stopped as it writes past it (a template looping over its input).
MAX_RENDERED_CHARS = 1 << 25
FILLER = "\ue000"  # a private-use character: no template treats it specially


class TurnNotFound(TemplateError):
    """The rule's header or end marker is not where the template wrote a turn."""


class RenderTooLarge(TemplateError):
    """The template wrote more than the cap for one conversation."""


class ControlTextRewrite(TemplateError):
    """The template replaces text with a turn marker: content could open or close a turn."""


def turn_markers(rule: MaskRule, special_tokens=()) -> list[str]:
    """What the Jinja path fills in content before it places turns, in the proof and the build alike: the control
    tokens of each piece of the rule's header and end markers (a special token of the tokenizer, or text written as
    one token: ``<|im_end|>``, ``[e~[``) and, for a piece that holds none, its text (plain-text role markers:
    ``User:``, ``Assistant:``). Never whitespace alone (an added token ``"\\n"``), and never a reasoning opener in a
    header (``...assistant\\n<think>``): filling it would change how the template splits reasoning off, and the
    header's other tokens already keep a forged header from matching.

        >>> turn_markers(MaskRule("r", "assistant", " Assistant:", "", ("Human:", "</s>"), ""), ["</s>", "\\n"])
        ['</s>', 'Assistant:', 'Human:']
    """
    specials = [t for t in special_tokens if t.strip()]
    found = set()
    for piece in (*rule.header.split("{name}"), *rule.end_markers, rule.final_turn_end):
        if piece.strip():
            tokens = set(MARKER.findall(piece)) | {t for t in specials if t in piece}
            found |= tokens or {piece.strip()}
    kept = found - set(REASONING_MARKERS)
    return sorted(kept or found)


def _rewrites_into(environment, template: str, markers: list[str]) -> str | None:
    """A ``replace`` in ``template`` whose replacement holds one of ``markers`` (as written), else None."""
    from jinja2 import nodes

    for node in environment.parse(template).find_all((nodes.Filter, nodes.Call)):
        if isinstance(node, nodes.Filter) and node.name == "replace":
            args = node.args[1:2]
        elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr == "replace":
            args = node.args[1:2]
        else:
            continue
        for arg in args:
            if isinstance(arg, nodes.Const) and isinstance(arg.value, str) and any(m in arg.value for m in markers):
                old = node.args[0].value if node.args and isinstance(node.args[0], nodes.Const) else "..."
                return f"replace({old!r}, {arg.value!r})"
    return None


def compile_template(template: str):
    """transformers' own compilation of a chat template (the Jinja environment ``apply_chat_template`` uses).
    transformers' import-time advisory ("PyTorch was not found") is not the user's business: silenced while
    importing, the environment left as it was."""
    previous = os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS")
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template
    finally:
        if previous is None:
            del os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"]
        else:
            os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = previous
    return _compile_jinja_template(template)


def clock_calls(template: str, variables: dict) -> list[str]:
    """The clock functions a render of a short conversation calls, whichever way the template reaches them (a name of
    its own: ``{% set c = strftime_now %}{{ c('%Y') }}``, which its text does not show)."""
    called = set()

    def recording(name):
        def clock(*args, **kwargs):
            called.add(name)
            return ""
        return clock

    given = {**variables, **{name: recording(name) for name in CLOCKS}}
    try:
        "".join(compile_template(template).generate(messages=[{"role": "user", "content": "q"},
                                                              {"role": "assistant", "content": "a"}], **given))
    except Exception:  # the template's own refusals, or one that does not compile: named where it is rendered
        pass
    return sorted(called)


def template_messages(messages: list) -> list:
    """``messages`` as a chat template reads them: the reasoning (checked as ``reasoning_content``) under each name
    templates read it by (gpt-oss reads ``thinking``).

    >>> template_messages([{"role": "assistant", "content": "a", "reasoning_content": "r"}])[0]["thinking"]
    'r'
    """
    return [{**m, "thinking": m["reasoning_content"], "reasoning": m["reasoning_content"]}
            if "reasoning_content" in m else m for m in messages]


class JinjaRenderer:
    """The template through Jinja with its turns placed by ``rule``; ``variables``: what the template is given besides
    the messages (bos_token, eos_token, ... as transformers passes them); ``special_tokens``: the tokenizer's."""

    def __init__(self, template: str, rule: MaskRule, variables: dict, special_tokens=(), max_chars: int | None = None):
        self.template_text = template
        self._template = compile_template(template)
        self.rule = rule
        self.variables = dict(variables)
        self.max_chars = max_chars
        self.markers = sorted(turn_markers(rule, special_tokens), key=len, reverse=True)
        rewrite = _rewrites_into(self._template.environment, template, self.markers)
        if rewrite:
            raise ControlTextRewrite(f"the template rewrites content into control text ({rewrite}): content could "
                                     "open or close a turn")
        self._marker_re = re.compile("|".join(map(re.escape, self.markers))) if self.markers else None
        head = re.escape(rule.header).replace(re.escape("{name}"), "(?:(?!" + FILLER + ").)*?")
        self._header_re = re.compile(head, re.S)

    def text_of(self, messages: list, tools: list | None = None) -> str:
        """The template's own text for ``messages`` (no turn finding): what native renderers are compared with."""
        return self._render_text(messages, tools)

    def _render_text(self, messages: list, tools: list | None = None) -> str:
        try:
            pieces, written = [], 0
            # every field of every message, the reasoning under each name templates read it by, and tools= as
            # transformers passes it (None when the conversation has none)
            for piece in self._template.generate(messages=template_messages(messages), tools=tools,
                                                 add_generation_prompt=False, **self.variables):
                written += len(piece)
                if self.max_chars is not None and written > self.max_chars:
                    raise RenderTooLarge(f"the template wrote more than {self.max_chars:,} characters")
                pieces.append(piece)
            return "".join(pieces)
        except TemplateError:
            raise
        except Exception as e:  # jinja2 TemplateError, raise_exception(...), TypeError in filters
            raise TemplateError(str(e)) from e

    def __call__(self, messages: list, tools: list | None = None) -> Rendered:
        text = self._render_text(messages, tools)
        # control text in any string the template writes (content, reasoning, arguments, results, tools) is filled
        sanitized = [{k: v if k == "role" else self._sanitized_value(v) for k, v in m.items()} for m in messages]
        sanitized_tools = self._sanitized_value(tools)
        same = sanitized == messages and sanitized_tools == tools
        probe = text if same else self._render_text(sanitized, sanitized_tools)
        if len(probe) != len(text):
            raise TemplateError("the template's output depends on control text inside content")
        turns = []
        cursor = 0
        for index, message in enumerate(messages):
            if message["role"] != self.rule.role:
                continue
            m = self._header_re.search(probe, cursor)
            if m is None:
                raise TurnNotFound(f"cannot locate the turn of message {index} in the rendered text")
            end = self._turn_end(probe, m.end())
            if end is None and self.rule.final_turn_end and index == len(messages) - 1:
                end = len(probe)  # the last turn, which a template without an end-of-turn token leaves open
            if end is None:
                raise TurnNotFound(f"cannot locate the end of message {index}'s turn")
            turns.append(Turn(index, message["role"], m.start(), m.end(), end))
            cursor = end - self._opens_next(probe, end)
        self._check_no_other_turn(probe, turns)
        return Rendered(text, tuple(turns))

    def _check_no_other_turn(self, probe: str, turns: list) -> None:
        """A header outside every placed turn is a turn no message was given (harmony writes a last answer's
        reasoning and its text as two messages): the conversation cannot be placed, never half supervised."""
        for m in self._header_re.finditer(probe):
            if not any(t.start <= m.start() < t.end for t in turns):
                raise TurnNotFound(f"the template writes the rule's header at character {m.start()} outside every "
                                   "placed turn: a message written under two headers cannot be placed")

    def _sanitized_value(self, value):
        """Every string in ``value`` (a message field: a string, or tool calls' and tools' objects and lists, their
        keys too) :meth:`_sanitized`."""
        if isinstance(value, str):
            return self._sanitized(value)
        if isinstance(value, list):
            return [self._sanitized_value(v) for v in value]
        if isinstance(value, dict):
            return {self._sanitized_value(k): self._sanitized_value(v) for k, v in value.items()}
        return value

    def _turn_end(self, probe: str, start: int) -> int | None:
        """Where the turn whose body starts at ``start`` ends: after the first end marker followed by the rule's
        separator (a marker that overlaps itself can also match earlier, ending inside the template's own)."""
        after = self.rule.after_end_of_turn
        found = []
        for marker in self.rule.end_markers:
            at = probe.find(marker, start)
            while at >= 0 and not probe.startswith(after, at + len(marker)):
                at = probe.find(marker, at + 1)
            if at >= 0:
                found.append(at + len(marker) + len(after))
        return min(found, default=None)

    def _opens_next(self, probe: str, end: int) -> int:
        """The length of the end marker closing at ``end`` when it is also the next turn's header (GLM's role
        tokens: a turn runs through the role token that starts the next one), else 0."""
        if self.rule.after_end_of_turn:
            return 0
        return next((len(m) for m in self.rule.end_markers if probe.endswith(m, 0, end) and self.rule.header.startswith(m)), 0)

    def _sanitized(self, content: str) -> str:
        """``content`` with its markers, and a marker's piece at either end (inside the whitespace the template
        may strip), replaced by filler of the same length."""
        if self._marker_re is None:
            return content
        chars = list(self._marker_re.sub(lambda x: FILLER * len(x.group()), content))
        end, start = len(content.rstrip()), len(content) - len(content.lstrip())
        for marker in self.markers:
            head = next((k for k in range(len(marker) - 1, 0, -1) if content.endswith(marker[:k], start, end)), 0)
            chars[end - head:end] = FILLER * head
            tail = next((k for k in range(len(marker) - 1, 0, -1) if content.startswith(marker[-k:], start, end)), 0)
            chars[start:start + tail] = FILLER * tail
        return "".join(chars)
