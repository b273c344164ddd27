"""Jinja fallback: render with the tokenizer's own chat template, for templates no native renderer matches.

Turns are located without trusting message content: each message's content is rendered a second time with
the rule's control markers (e.g. ``<|im_start|>``, ``<|im_end|>``) replaced by same-length filler, and the
turns are found in that sanitized text. A template whose output changes length when content changes that way
is refused (``TemplateError``) rather than guessed.
"""

from __future__ import annotations

import re

from sftpack.families.profiles import MaskRule
from sftpack.families.render import Rendered, TemplateError, Turn

FILLER = "\ue000"  # a private-use character: no template treats it specially


class JinjaRenderer:
    def __init__(self, template: str, rule: MaskRule, special_tokens: dict[str, str], markers: list[str]):
        from transformers.utils.chat_template_utils import _compile_jinja_template

        self.template_text = template
        self._template = _compile_jinja_template(template)
        self.rule = rule
        self.variables = dict(special_tokens)  # bos_token, eos_token, ... as transformers passes them
        self.markers = sorted(markers, key=len, reverse=True)
        self._marker_re = re.compile("|".join(map(re.escape, self.markers))) if self.markers else None
        head = re.escape(rule.header).replace(re.escape("{name}"), "(?:(?!" + FILLER + ").)*?")
        self._header_re = re.compile(head, re.S)

    def text_of(self, messages: list) -> str:
        """The template's own text for ``messages`` (no turn finding): what native renderers are compared with."""
        return self._render_text(messages)

    def _render_text(self, messages: list) -> str:
        try:
            return self._template.render(messages=messages, add_generation_prompt=False, **self.variables)
        except Exception as e:  # jinja2 TemplateError, raise_exception(...), TypeError in filters
            raise TemplateError(str(e)) from e

    def __call__(self, messages: list) -> Rendered:
        text = self._render_text(messages)
        sanitized_messages = [
            {**m, "content": self._marker_re.sub(lambda x: FILLER * len(x.group()), m["content"])} if self._marker_re else m
            for m in messages
        ]
        probe = self._render_text(sanitized_messages) if sanitized_messages != messages else text
        if len(probe) != len(text):
            raise TemplateError("the template's output depends on control text inside content")
        turns = []
        cursor = 0
        rule = self.rule
        ends = rule.end_markers
        for index, message in enumerate(messages):
            if message["role"] != rule.role:
                continue
            m = self._header_re.search(probe, cursor)
            if m is None:
                raise TemplateError(f"cannot locate the turn of message {index} in the rendered text")
            found = [(at, len(eot)) for eot in ends if (at := probe.find(eot, m.end())) >= 0]
            if not found:
                raise TemplateError(f"cannot locate the end of message {index}'s turn")
            at, length = min(found)  # the first end-of-turn marker after the header closes the turn
            end = at + length
            if rule.after_end_of_turn and probe.startswith(rule.after_end_of_turn, end):
                end += len(rule.after_end_of_turn)
            turns.append(Turn(index, message["role"], m.start(), m.end(), end))
            cursor = end
        return Rendered(text, tuple(turns))
