"""Loss-mask rules: which characters of a rendered conversation are supervised.

The renderer reports where the template wrote each message (:class:`~sftpack.families.render.Turn`); the rule
(``masks/NAME.yaml``) says which part of an assistant turn is supervised. Nothing here searches the text for
markers, so control text inside message content cannot open, close or move a span.

    >>> from sftpack.families.registry import get_renderer
    >>> from sftpack.families.profiles import load_mask_rule
    >>> msgs = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
    >>> r = get_renderer("qwen3_5")(msgs)
    >>> [r.text[a:b] for a, b in supervised_spans(r, msgs, load_mask_rule("qwen3_5"))]
    ['\\n</think>\\n\\nA<|im_end|>\\n']
"""

from __future__ import annotations

from sftpack.families.profiles import MaskRule
from sftpack.families.render import Rendered


class RuleMismatch(RuntimeError):
    """The renderer and the rule disagree about a turn's header or end marker (a bug, never user input)."""


def _header_matches(rule: MaskRule, header: str) -> bool:
    if rule.header_parts is None:
        return header == rule.header
    before, after = rule.header_parts
    return header.startswith(before) and header.endswith(after) and len(header) >= len(before) + len(after)


def is_supervised_message(message: dict, rule: MaskRule) -> bool:
    """slime's ``message.get("step_loss_mask", 1) != 1`` switches a turn off (None, as Arrow fills absent
    struct fields, counts as absent)."""
    if message["role"] != rule.role:
        return False
    flag = message.get("step_loss_mask")
    return flag is None or flag == 1


def close_final_turn(rendered: Rendered, rule: MaskRule) -> Rendered:
    """``rendered`` with the rule's ``final_turn_end`` appended when the conversation ends with an assistant turn
    the template leaves open (GLM: no end-of-turn token; the role token that would follow is the stop token)."""
    if not rule.final_turn_end or not rendered.turns:
        return rendered
    last = rendered.turns[-1]
    if last.role != rule.role or last.end != len(rendered.text):
        return rendered
    text = rendered.text + rule.final_turn_end
    return Rendered(text, rendered.turns[:-1] + (last._replace(end=len(text)),))


def supervised_spans(rendered: Rendered, messages: list, rule: MaskRule) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``rendered.text`` that the rule supervises."""
    text = rendered.text
    spans = []
    tails, skips = rule.end_tails, rule.skips
    for turn in rendered.turns:
        if turn.role != rule.role:
            continue
        if not _header_matches(rule, text[turn.start : turn.body]) or not text.endswith(tails, 0, turn.end):
            raise RuleMismatch(f"rule {rule.name!r} does not fit turn {turn} of the rendered text")
        if not is_supervised_message(messages[turn.message], rule):
            continue
        begin = turn.body
        for skip in skips:  # the longest skipped text that follows the header
            if text.startswith(skip, begin):
                begin += len(skip)
                break
        spans.append((begin, turn.end))
    return spans
