"""Infer a loss-mask rule from a chat template alone, by rendering it on probe conversations.

The probes carry sentinel contents (words no template writes by itself), so every character around a sentinel is
the template's own text. From them: the generation prompt (``add_generation_prompt=True`` minus ``False``), each
role's turn header, what the template writes after an assistant's content (end-of-turn marker and separator, for
the conversation's last turn and for an earlier one), the turn convention and the content transforms. The rule
follows the principle of every shipped rule: supervise what the template writes for an assistant message after
the generation prompt, through the marker that ends the turn and the separator after it.

    >>> template = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}<|end|>\\n{% endfor %}"
    ...             "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    >>> inferred = infer_rule(template, "toy")
    >>> inferred.rule.header, inferred.rule.end_of_turn, inferred.rule.after_end_of_turn
    ('<|assistant|>', '<|end|>', '\\n')
    >>> inferred.facts.convention, inferred.facts.strips_content
    ('end-of-turn token', True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sftpack.base.errors import UsageError
from sftpack.families.jinja import MARKER, MAX_RENDERED_CHARS, RenderTooLarge, compile_template
from sftpack.families.profiles import MaskRule
from sftpack.families.render import TemplateError

# Sentinel contents: letters and digits only, so no template trims, escapes or splits them.
USER_1, USER_2, ANSWER_1, ANSWER_2, REASONING, SYSTEM = "Uq7one", "Uq7two", "Aq7one", "Aq7two", "Rq7why", "Sq7sys"
# An answer with reasoning, spaced as no template writes it: a template that splits reasoning off rewrites it
THOUGHTFUL = f"<think>\n\n{REASONING}\n\n</think>\n\n\n{ANSWER_1}"


class InferenceError(UsageError):
    """The template cannot be read by the probes (one line, exit 2)."""


@dataclass(frozen=True)
class TemplateFacts:
    """What the probe renders found (printed by ``new-model`` and recorded in the rule file's comment)."""

    generation_prompt: str
    user_header: str
    assistant_turn: str  # the last turn of (user, assistant "Paris.") as written, header included
    final_end: str  # what follows the content of a conversation's last assistant message
    history_end: str  # ... and of an assistant message followed by a user message
    convention: str  # "end-of-turn token" | "next role header ends the turn" | "channels"
    strips_content: bool
    reasoning: str  # how a content "<think>...</think>answer" is written
    reasoning_closer: str  # the text that closes a reasoning block ("" when the template writes none)
    trailer: str = ""  # what the template writes after a conversation's last turn only (Phi-3.5's eos_token)


@dataclass(frozen=True)
class Inferred:
    rule: MaskRule
    facts: TemplateFacts


class TemplateRunner:
    """A chat template compiled the way transformers compiles it, rendered with or without the generation prompt.
    Text the template writes only at a conversation's very end, after its last turn and never before a generation
    prompt (Phi-3.5's ``eos_token``: :attr:`trailer`), is left out of a render without one: it belongs to no turn."""

    def __init__(self, template: str, variables: dict | None = None):
        self.template = template
        self._compiled = compile_template(template)
        self.variables = dict(variables or {})
        self.trailer = ""
        self.trailer = self._trailer()

    def __call__(self, messages: list, add_generation_prompt: bool = False, tools: list | None = None) -> str:
        try:
            pieces, written = [], 0
            given = {"tools": tools} if tools is not None else {}
            for piece in self._compiled.generate(messages=messages, add_generation_prompt=add_generation_prompt,
                                                 **given, **self.variables):
                written += len(piece)
                if written > MAX_RENDERED_CHARS:  # the build's cap: a template looping over its input stops here too
                    raise RenderTooLarge(f"the template wrote more than {MAX_RENDERED_CHARS:,} characters")
                pieces.append(piece)
            text = "".join(pieces)
        except TemplateError:
            raise
        except Exception as e:  # jinja2 errors, raise_exception(...), TypeError in filters
            raise TemplateError(str(e)) from e
        if self.trailer and not add_generation_prompt and text.endswith(self.trailer):
            return text[: len(text) - len(self.trailer)]
        return text

    def _trailer(self) -> str:
        """What ends a prompt but is gone once the generation prompt or an answer follows, and ends the answered
        conversation too (``<|user|>\\nq<|end|>\\n<|endoftext|>`` / ``...<|assistant|>\\n``)."""
        prompt = [_user(USER_1)]
        try:
            plain, generation, answered = self(prompt), self(prompt, True), self([*prompt, _assistant(ANSWER_1)])
        except TemplateError:
            return ""
        tail = plain[len(common_prefix(plain, generation)):]
        if not tail.strip() or generation.startswith(plain) or not answered.endswith(tail):
            return ""
        before = plain[: len(plain) - len(tail)]
        return tail if answered.startswith(before) and generation.startswith(before) else ""


def _user(content):
    return {"role": "user", "content": content}


def _assistant(content):
    return {"role": "assistant", "content": content}


def common_prefix(*texts: str) -> str:
    """The longest common prefix of ``texts`` that does not end inside a marker (``<|channel>`` and ``<think>``
    share ``<``, which is no text of either)."""
    prefix = os.path.commonprefix(list(texts))
    for text in texts:
        for marker in MARKER.finditer(text, 0, len(prefix) + 64):
            if marker.start() < len(prefix) < marker.end():
                return prefix[: marker.start()]
    return prefix


def _after(prefix: str, text: str, what: str) -> str:
    if not text.startswith(prefix):
        at = len(common_prefix(prefix, text))
        raise InferenceError(f"the template rewrites what it wrote for the user message {USER_1!r} when {what} follows: "
                             f"{_short(prefix[at:])} becomes {_short(text[at:])}")
    return text[len(prefix):]


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:28] + "..." + text[-28:])


def _split_end(end: str) -> tuple[str, str]:
    """``<|im_end|>\\n`` -> (``<|im_end|>``, ``\\n``): the marker, then the whitespace written after it."""
    marker = end.rstrip()
    return marker, end[len(marker):]


TURN_PROBES = ("final", "history", "reasoning", "reasoning_history", "closer", "closer_history", "padded")


def _probe(render: TemplateRunner) -> dict:
    """The probe renders the inference reads (each a text; see :func:`infer_rule`)."""
    prompt = render([_user(USER_1)])
    turns = {
        "final": _after(prompt, render([_user(USER_1), _assistant(ANSWER_1)]), "an assistant message"),
        "history": _after(prompt, render([_user(USER_1), _assistant(ANSWER_1), _user(USER_2)]), "a later user message"),
        "reasoning": _after(prompt, render([_user(USER_1), _assistant(THOUGHTFUL)]),
                            "an assistant message with reasoning"),
        "closer": _after(prompt, render([_user(USER_1), _assistant(f"{ANSWER_1} </think> {ANSWER_1}")]), "an assistant message"),
        "closer_history": _after(prompt, render([_user(USER_1), _assistant(f"{ANSWER_1} </think> {ANSWER_1}"), _user(USER_2)]),
                                 "a later user message"),
        "padded": _after(prompt, render([_user(USER_1), _assistant(f"  {ANSWER_1}\n\n")]), "an assistant message"),
        "reasoning_history": _after(prompt, render([_user(USER_1), _assistant(THOUGHTFUL),
                                                   _user(USER_2)]), "a later user message"),
    }
    generation = _after(prompt, render([_user(USER_1)], add_generation_prompt=True), "the generation prompt")
    if not generation:
        raise InferenceError("add_generation_prompt=True writes nothing: the template has no generation prompt")
    try:
        users = _after(prompt, render([_user(USER_1), _user(USER_2)]), "a second user message")
        user_header = users[: users.index(USER_2)]
    except (TemplateError, ValueError, InferenceError):
        user_header = None  # the template refuses two user messages in a row; found from the history turn instead
    for name, text in turns.items():
        if ANSWER_1 not in text:
            raise InferenceError(f"the template does not write an assistant message's text content (user {USER_1!r}, "
                                 f"assistant {ANSWER_1!r}): it reads content only as a list of parts")
    return {"prompt": prompt, "generation": generation, "user_header": user_header, **turns}


def _ends(probe: dict) -> tuple[str, str, str]:
    """(final end, history end, user header): what follows an assistant's content in each position."""
    final_end = probe["final"][probe["final"].index(ANSWER_1) + len(ANSWER_1):]
    history = probe["history"]
    tail = history[history.index(ANSWER_1) + len(ANSWER_1):]  # history end + user header + USER_2 + user end
    between = tail[: tail.index(USER_2)]
    user_header = probe["user_header"]
    if user_header is not None and between.endswith(user_header):
        return final_end, between[: len(between) - len(user_header)], user_header
    if between.startswith(final_end):
        return final_end, final_end, between[len(final_end):]
    raise InferenceError(f"cannot tell where an assistant turn ends before a user message ({between!r})")


def _end_of_turn(final_end: str, history_end: str, user_header: str, header: str) -> dict:
    """The rule's end keys and the turn convention."""
    (final_marker, final_sep), (history_marker, history_sep) = _split_end(final_end), _split_end(history_end)
    if not final_marker and not history_marker:  # GLM: the next role's header ends the turn, the model stops on it
        next_user = user_header.strip()
        if not next_user:
            raise InferenceError("the template writes nothing between an answer and the next user message")
        return {"end_of_turn": [next_user, header.strip()] if header.strip() != next_user else next_user,
                "after_end_of_turn": "", "final_turn_end": next_user, "convention": "next role header ends the turn"}
    if not final_marker or not history_marker or final_sep != history_sep:
        raise InferenceError(f"the template ends a last assistant turn with {final_end!r} but an earlier one with "
                             f"{history_end!r}: no end-of-turn marker and separator fit both")
    markers = history_marker if history_marker == final_marker else [history_marker, final_marker]
    return {"end_of_turn": markers, "after_end_of_turn": final_sep, "final_turn_end": "", "convention": "end-of-turn token"}


def _header_and_skip(probe: dict) -> tuple[str, str | tuple]:
    """The header is what every assistant turn shares with the generation prompt; the skipped texts are the rest
    of the prompt that a turn may carry (Qwen3.5's ``<think>\n``, only on turns that write a reasoning block;
    Nemotron's ``<think>`` before an empty ``</think>``, ``<think>\n`` before reasoning)."""
    generation = probe["generation"]
    turns = [probe[k] for k in TURN_PROBES]
    header = common_prefix(generation, *turns)
    if not header.strip():
        raise InferenceError(f"the generation prompt {generation!r} does not start the assistant's turn as the template "
                             f"writes it ({probe['final'][:60]!r})")
    skips = sorted({common_prefix(generation, t)[len(header):] for t in turns} - {""}, key=len, reverse=True)
    return header, (skips[0] if len(skips) == 1 else tuple(skips)) if skips else ""


def _reasoning(probe: dict, start: int) -> tuple[str, str]:
    """(description, closer) of how the template writes an answer whose content holds ``<think>R</think>A``."""
    last, earlier = probe["reasoning"], probe["reasoning_history"]
    kept = "kept" if REASONING in earlier else "dropped"
    if THOUGHTFUL in last:
        written = "as it is"
    elif REASONING not in last:
        written = "without its reasoning"
    else:
        written = repr(last[start: last.index(ANSWER_1)].replace(REASONING, "{reasoning}"))
    closer = "" if THOUGHTFUL in last and THOUGHTFUL in earlier else "</think>"
    return f"an answer's reasoning (<think>...</think> in content) is written {written} on the last turn, {kept} on earlier turns", closer


def _channel_text(probe: dict, start: int) -> str:
    final = probe["final"]
    return final[start: final.index(ANSWER_1)]


def infer_rule(template: str, name: str, variables: dict | None = None) -> Inferred:
    """The rule ``name`` for ``template`` and the facts it rests on; :class:`InferenceError` in one line when the
    probes cannot read the template."""
    render = TemplateRunner(template, variables)
    try:
        probe = _probe(render)
    except TemplateError as e:
        raise InferenceError(f"the template raises on a probe conversation: {e}") from None
    header, skip = _header_and_skip(probe)
    final_end, history_end, user_header = _ends(probe)
    ends = _end_of_turn(final_end, history_end, user_header, header)
    start = len(header) + len(skip if isinstance(skip, str) else skip[0])
    convention = ends.pop("convention")
    channel = _channel_text(probe, start)
    if convention == "end-of-turn token" and set(MARKER.findall(channel)) - {"<think>", "</think>"}:
        convention = "channels"  # the model writes a channel header of its own after the prompt (harmony)
    reasoning, closer = _reasoning(probe, len(header))
    example_turn = render([_user("What is the capital of France?"), _assistant("Paris.")])
    example_turn = example_turn[len(render([_user("What is the capital of France?")])):] + ends["final_turn_end"]
    supervised = example_turn[len(header):]
    for text in (skip,) if isinstance(skip, str) else skip:
        if text and supervised.startswith(text):
            supervised = supervised[len(text):]
            break
    rule = MaskRule(name=name, role="assistant", header=header, skip_after_header=skip,
                    end_of_turn=tuple(ends["end_of_turn"]) if isinstance(ends["end_of_turn"], list) else ends["end_of_turn"],
                    after_end_of_turn=ends["after_end_of_turn"], final_turn_end=ends["final_turn_end"],
                    example={"turn": example_turn + render.trailer, "supervised_chars": supervised})
    padded = probe["padded"]
    facts = TemplateFacts(
        generation_prompt=probe["generation"], user_header=user_header, assistant_turn=example_turn,
        final_end=final_end, history_end=history_end, convention=convention,
        strips_content=f"  {ANSWER_1}" not in padded and f"{ANSWER_1}\n\n" not in padded,
        reasoning=reasoning, reasoning_closer=closer, trailer=render.trailer)
    return Inferred(rule, facts)


def _scalar(value) -> str:
    """A YAML scalar or flow list: JSON's double-quoted strings are YAML's."""
    import json

    return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)


def rule_yaml(inferred: Inferred, source: str, proof: str) -> str:
    """The rule file ``masks/NAME.yaml``: a comment saying what the probes found, the keys, the worked example."""
    rule, facts = inferred.rule, inferred.facts
    import textwrap

    comment = (f"Loss-mask rule `{rule.name}`, inferred by `sftpack new-model` from {source}. Generation prompt "
               f"{facts.generation_prompt!r}; turn convention: {facts.convention}; the template "
               f"{'strips' if facts.strips_content else 'keeps'} the whitespace around an answer; {facts.reasoning}. "
               "Each assistant turn is supervised from just after its header (and the longest skipped text that "
               "follows it: the rest of the generation prompt) through its end-of-turn marker and separator: what the "
               "model writes after the generation prompt. "
               + (f"The template ends every conversation with {facts.trailer!r} after its last turn (never before a "
                  "generation prompt): it belongs to no turn and is not supervised, as the example's turn shows. "
                  if facts.trailer else "") + f"{proof[:1].upper() + proof[1:]}.")
    lines = [*("# " + line for line in textwrap.wrap(comment, 114, break_long_words=False, break_on_hyphens=False)),
        f"name: {rule.name}",
        "role: assistant",
        f"header: {_scalar(rule.header)}",
        f"skip_after_header: {_scalar(rule.skip_after_header)}",
        f"end_of_turn: {_scalar(rule.end_of_turn)}",
        f"after_end_of_turn: {_scalar(rule.after_end_of_turn)}",
    ]
    if rule.final_turn_end:
        lines.append(f"final_turn_end: {_scalar(rule.final_turn_end)}")
    lines += ["example:", f"  turn: {_scalar(rule.example['turn'])}",
              f"  supervised_chars: {_scalar(rule.example['supervised_chars'])}"]
    return "\n".join(lines) + "\n"
