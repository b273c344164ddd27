"""Proof before use: a loss-mask rule is checked against the chat template itself before rows are built with it.

On a battery of conversations (the bundled sample's first ones, generated edge cases, and every known family's
control text forged inside user and assistant content), for each assistant message:

- **start**: supervision starts where the template's text departs from the generation prompt: the prompt
  (``add_generation_prompt=True`` on the messages before it) is what the model is given, the rest it writes;
- **context**: when the full render starts with the render of the messages before it, the turn starts exactly
  there (no text between a prompt and its answer belongs to no turn);
- **end**: the supervised text equals what the template writes after the generation prompt when the message is
  the conversation's last, through the end-of-turn marker and separator. For an earlier message the template may
  drop reasoning and use its other end marker (Qwen3.5, harmony); any other difference means its earlier turns
  change when later turns are added in a way that changes the supervised text, and the template is refused;
- **forgery**: replacing every control text inside contents by neutral text of the same length moves no span.

Where the template writes tool calls or reasoning, the tool battery (:func:`~sftpack.families.fields.tool_battery`)
is proved too, with its tools and every name of the reasoning, unless the build does not trust the rule with tool
conversations (:func:`~sftpack.families.fields.tool_span_check`): then they are counted as skipped, as it skips them.

A conversation the template (or the Jinja path) refuses is counted as skipped, as the build skips it.

    >>> from sftpack.families.infer import TemplateRunner, infer_rule
    >>> template = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    ...             "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    >>> rule = infer_rule(template, "toy").rule
    >>> prove(TemplateRunner(template), rule, edge_cases()).turns > 0
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from sftpack.base.errors import UsageError
from sftpack.families.mask import RuleMismatch, close_final_turn, supervised_spans
from sftpack.families.infer import TemplateRunner, common_prefix
from sftpack.families.conversation import assistant_first
from sftpack.families.fields import tool_battery, tool_span_check, written_fields
from sftpack.families.jinja import MAX_RENDERED_CHARS, ControlTextRewrite, JinjaRenderer, template_messages
from sftpack.families.profiles import MaskRule, list_mask_rules, load_mask_rule
from sftpack.families.render import TemplateError

SAMPLE_CONVERSATIONS = 64  # of the bundled sample, in file order
MIN_PROVED = 12  # a rule proved on fewer conversations has been shown too few turns: refused


class ProofFailure(UsageError):
    """The rule does not mask the template by the principle (one line naming the conversation and the reason)."""


@dataclass
class ProofReport:
    conversations: int = 0
    turns: int = 0
    skipped: dict = field(default_factory=dict)  # reason -> count
    stops: tuple = ()  # the end-of-turn markers every assistant turn was checked to supervise
    tool_conversations: int = 0  # of ``conversations``: with tool calls, tool results and reasoning

    def line(self) -> str:
        """What was checked, and what was not: the conversations the build skips too, by the reason it counts."""
        unchecked = [f"{n} {reason}" for reason, n in sorted(self.skipped.items())]
        stops = f", each supervised from the end of its generation prompt through {' or '.join(self.stops)}" if self.stops else ""
        tools = f"{self.tool_conversations} with tool calls, results and reasoning; " if self.tool_conversations else ""
        return (f"proved on {self.conversations} conversations ({tools}{self.turns} assistant turns{stops})"
                + (f"; not checked: {', '.join(unchecked)} (skipped so by a build through the template)" if unchecked else ""))


def _c(*pairs):
    return [{"role": role, "content": content} for role, content in pairs]


def edge_cases() -> list[tuple[str, list]]:
    """Named conversations: system first, multi-turn, reasoning, empty and whitespace contents, runs of one role."""
    u, a, s = "user", "assistant", "system"
    think = "<think>\nLet me add them.\n</think>\n\n4."
    return [
        ("plain", _c((u, "What is 2+2?"), (a, "4."))),
        ("system first", _c((s, "Be brief."), (u, "What is 2+2?"), (a, "4."))),
        ("multi-turn", _c((s, "Be brief."), (u, "2+2?"), (a, "4."), (u, "3+3?"), (a, "6."), (u, "4+4?"), (a, "8."))),
        ("reasoning last", _c((u, "2+2?"), (a, think))),
        ("reasoning earlier", _c((u, "2+2?"), (a, think), (u, "and 3+3?"), (a, "<think>r</think>6."))),
        ("reasoning unclosed", _c((u, "x"), (a, "<think>no close"), (u, "y"), (a, "fine"))),
        ("empty answer", _c((u, "a"), (a, ""), (u, "b"), (a, "ok"))),
        ("whitespace answer", _c((u, "a"), (a, "   "), (u, "b"), (a, "\n\n"))),
        ("empty user and system", _c((s, ""), (u, ""), (a, "fine"))),
        ("padded contents", _c((s, "  s  \n"), (u, "\n\nq\n"), (a, "\n\n  answer  \n\n"))),
        ("two users", _c((u, "first"), (u, "second"), (a, "answer"))),
        ("two answers", _c((u, "q"), (a, "one"), (a, "two"))),
        ("ends with a user", _c((u, "q"), (a, "a"), (u, "unanswered"))),
        ("assistant first", _c((a, "hello"), (u, "hi"), (a, "yes"))),
        ("unicode", _c((u, "東京 العربية 😀 e\u0301"), (a, "Ответ: да ✓"))),
    ]


def known_rules() -> list[MaskRule]:
    return [load_mask_rule(name) for name in list_mask_rules()]


def control_texts(rules: list[MaskRule], extra: tuple = ()) -> list[str]:
    """Every marker of ``rules`` (each family's), their whole turns, and ``extra`` (the tokenizer's special tokens)."""
    texts = dict.fromkeys([*extra, "<think>", "</think>"])
    for rule in rules:
        texts.update(dict.fromkeys(rule.markers))
        header = rule.header.replace("{name}", "assistant")
        for end in rule.end_markers:
            for skip in rule.skips or ("",):
                texts[f"{header}{skip}forged{end}{rule.after_end_of_turn}"] = None
    return [t for t in texts if t.strip()]


def forgeries(texts: list[str]) -> list[tuple[str, list]]:
    """Each control text inside user, assistant and system content, alone, mid-text, first and last."""
    u, a, s = "user", "assistant", "system"
    out = []
    for text in texts:
        out.append((f"forged {text!r}", _c((s, f"sys {text}"), (u, f"q {text} q"), (a, f"a {text} a"), (u, text),
                                          (a, f"{text}end"), (u, "last?"), (a, f"start{text}"))))
    return out


def sample_conversations(count: int = SAMPLE_CONVERSATIONS) -> list[tuple[str, list]]:
    """The bundled sample's first ``count`` valid conversations, named by their ids."""
    import pyarrow.parquet as pq

    from sftpack.families.conversation import Skip, check_messages
    from sftpack.base.bundled import SAMPLE_PATH

    out = []
    for row in pq.read_table(SAMPLE_PATH, columns=["id", "messages"]).slice(0, 4 * count).to_pylist():
        try:
            out.append((f"sample {row['id']}", check_messages(row["messages"])))
        except Skip:
            continue
        if len(out) == count:
            break
    return out


def battery(rule: MaskRule, extra: tuple = (), sample: int = SAMPLE_CONVERSATIONS) -> list[tuple[str, list]]:
    return sample_conversations(sample) + edge_cases() + forgeries(control_texts([*known_rules(), rule], extra))


def prove(render: TemplateRunner, rule: MaskRule, conversations: list, extra: tuple = (),
          special_tokens: tuple | None = None) -> ProofReport:
    """Check ``rule`` on ``conversations`` (``(name, messages)``) rendered by ``render``; :class:`ProofFailure`.
    ``extra``: control text forged in content besides the rules' markers; ``special_tokens``: the tokenizer's, which
    the build's renderer is given (default: ``extra``)."""
    jinja = _renderer(render, rule, extra if special_tokens is None else special_tokens)
    neutral = [t for t in control_texts([*known_rules(), rule], extra) if "think>" not in t]
    report = ProofReport(stops=rule.end_markers)
    for name, messages in conversations:
        _prove_conversation(name, render, jinja, rule, messages, neutral, report)
    for name, conversation in _tool_conversations(jinja, report):
        tools = conversation.tools
        proved = report.conversations
        _prove_conversation(name, _WithTools(render, tools), partial(jinja, tools=tools), rule, conversation.messages,
                            neutral, report)
        report.tool_conversations += report.conversations - proved
    if report.conversations < MIN_PROVED:
        raise ProofFailure(f"rule {rule.name!r} is refused: {report.line()}, fewer than the {MIN_PROVED} conversations "
                           "a proof needs")
    return report


class _Refused(Exception):
    pass


def _prove_conversation(name, render, jinja, rule, messages, neutral, report) -> None:
    if assistant_first(messages):  # the build skips them (assistant_first): nothing to prove
        report.skipped["assistant_first"] = report.skipped.get("assistant_first", 0) + 1
        return
    try:
        _prove_one(render, jinja, rule, messages, neutral, report)
    except TemplateError:
        report.skipped["template_error"] = report.skipped.get("template_error", 0) + 1
        return
    except _Refused as e:
        raise ProofFailure(f"rule {rule.name!r} is refused on conversation {name!r}: {e}") from None
    report.conversations += 1


def _tool_conversations(jinja: JinjaRenderer, report: ProofReport) -> list:
    """The tool battery where the template writes tool calls or reasoning; none where the build skips tool
    conversations for this rule (:func:`~sftpack.families.fields.tool_span_check`), counted as it counts them."""
    if not written_fields(jinja.text_of) & {"tool_calls", "reasoning_content"}:
        return []
    conversations = tool_battery()
    if tool_span_check(jinja):
        report.skipped["template_error"] = report.skipped.get("template_error", 0) + len(conversations)
        return []
    return conversations


class _WithTools:
    """``render`` for one tool conversation: given its tools, and its reasoning under every name templates read it
    by, as the build's Jinja path gives them."""

    def __init__(self, render: TemplateRunner, tools: list | None):
        self.render, self.tools = render, tools

    def __call__(self, messages: list, add_generation_prompt: bool = False) -> str:
        return self.render(template_messages(messages), add_generation_prompt, tools=self.tools)


def _renderer(render: TemplateRunner, rule: MaskRule, special_tokens) -> JinjaRenderer:
    """The build's Jinja renderer for ``rule`` (the same turn finding); a template it refuses is the proof's refusal."""
    try:
        return JinjaRenderer(render.template, rule, render.variables, special_tokens, max_chars=MAX_RENDERED_CHARS)
    except ControlTextRewrite as e:
        raise ProofFailure(f"rule {rule.name!r} is refused: {e}") from None


def _prove_one(render, jinja, rule, messages, neutral, report) -> None:
    rendered = close_final_turn(jinja(messages), rule)
    text = rendered.text
    try:
        spans = supervised_spans(rendered, messages, rule)
    except RuleMismatch as e:
        raise _Refused(str(e)) from None
    turns = [t for t in rendered.turns if t.role == rule.role]
    for turn, (start, end) in zip(turns, spans):
        _prove_turn(render, jinja, rule, messages, text, turn, start, end)
        report.turns += 1
    _prove_forgery(jinja, rule, messages, neutral, spans)


def _prefix(render, messages, add_generation_prompt=False) -> str:
    if not messages and not add_generation_prompt:
        try:
            return render([], False)
        except TemplateError:
            return ""
    return render(messages, add_generation_prompt)


def _opener(render, messages, i) -> str:
    """The generation prompt before message ``i``, taken where its run of assistant messages starts (a prompt
    ends with a user message; a template may end its last assistant turn differently, as harmony does)."""
    j = i
    while j > 0 and messages[j - 1]["role"] == messages[i]["role"]:
        j -= 1
    prompt, generation = _prefix(render, messages[:j]), _prefix(render, messages[:j], True)
    if not generation.startswith(prompt):
        raise _Refused(f"message {j}: the generation prompt rewrites the prompt before it")
    return generation[len(prompt):]


def _alone(render, jinja, rule, messages, i, opener) -> str:
    """What the template writes after the generation prompt for message ``i`` as the conversation's last."""
    last = render(messages[: i + 1])
    prompt = _prefix(render, messages[:i])
    at = len(prompt) if last.startswith(prompt) else jinja(messages[: i + 1]).turns[-1].start
    alone = last[at + len(common_prefix(opener, last[at:])):]
    return alone + rule.final_turn_end  # a template without an end-of-turn token leaves the last turn open


def _prove_turn(render, jinja, rule, messages, text, turn, start, end) -> None:
    i = turn.message
    opener = _opener(render, messages, i)
    expected = turn.start + len(common_prefix(opener, text[turn.start:]))
    if expected != start and not _content_starts_with(messages[i]["content"], text[min(start, expected): max(start, expected)]):
        raise _Refused(f"message {i}: supervision starts at character {start}, but the generation prompt ends at {expected}")
    prompt = _prefix(render, messages[:i])
    if text.startswith(prompt) and turn.start != len(prompt):
        raise _Refused(f"message {i}: {text[len(prompt):turn.start]!r} between its prompt and its turn is in no turn")
    alone = _alone(render, jinja, rule, messages, i, opener)
    supervised = text[start:end]
    if not any(supervised.endswith(m + rule.after_end_of_turn) for m in rule.end_markers):
        raise _Refused(f"message {i}: the marker that ends its turn is not supervised ({_short(supervised)})")
    if i == len(messages) - 1 and supervised != alone:
        raise _Refused(f"message {i}: supervised {supervised!r}, but the template writes {alone!r} after the generation prompt")
    if _normalized(supervised, rule) != _normalized(alone, rule) and not _reasoning_dropped(
            _without_end(supervised, rule), _without_end(alone, rule), messages[i]):
        raise _Refused(f"message {i}: the template writes it as {_short(supervised)} when later messages follow, "
                       f"but as {_short(alone)} as the conversation's last")


def _content_starts_with(content: str, disputed: str) -> bool:
    """A disagreement that is the message's own content coinciding with the prompt's text (``<think>...``)."""
    return bool(disputed.strip()) and content.lstrip().startswith(disputed.strip())


def _normalized(supervised: str, rule: MaskRule) -> str:
    """The answer of a supervised text: reasoning (through the last ``</think>``) and the end marker removed."""
    if "</think>" in supervised:
        supervised = supervised[supervised.rindex("</think>") + len("</think>"):].lstrip()
    for skip in rule.skips:
        if skip.strip() and supervised.startswith(skip):
            supervised = supervised[len(skip):]  # the prompt holds it, in either position
            break
    if supervised.startswith("<think>"):  # a reasoning opener the prompt holds (content "<think>..." left open)
        supervised = supervised[len("<think>"):]
    return _without_end(supervised, rule).strip()


def _without_end(supervised: str, rule: MaskRule) -> str:
    for marker in rule.end_markers:
        if supervised.endswith(marker + rule.after_end_of_turn):
            return supervised[: len(supervised) - len(marker + rule.after_end_of_turn)]
    return supervised


def _reasoning_dropped(supervised: str, alone: str, message: dict) -> bool:
    """Whether ``supervised`` is ``alone`` less one piece holding the message's reasoning whole: a template that
    writes reasoning on the last turn only, in markup of its own (harmony's analysis channel, which holds a tool
    call's content where the message has no reasoning)."""
    thought = (message.get("reasoning_content") or message["content"] if message.get("tool_calls") else
               message.get("reasoning_content") or "").strip()
    if not thought:
        return False
    head = len(common_prefix(supervised, alone))
    tail = len(common_prefix(supervised[head:][::-1], alone[head:][::-1]))
    return head + tail == len(supervised) and thought in alone[head: len(alone) - tail]


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:18] + "..." + text[-18:])


def _prove_forgery(jinja, rule, messages, neutral, spans) -> None:
    if not any(t in m["content"] for m in messages for t in neutral):
        return
    plain = []
    for m in messages:
        content = m["content"]
        for t in sorted(neutral, key=len, reverse=True):
            content = content.replace(t, "x" * len(t))
        plain.append({**m, "content": content})
    try:
        rendered = close_final_turn(jinja(plain), rule)
    except TemplateError:
        return
    if len(rendered.text) == len(close_final_turn(jinja(messages), rule).text) and supervised_spans(rendered, plain, rule) != spans:
        raise _Refused("control text inside content moves supervision")


def _masked(jinja, rule, messages):
    try:
        rendered = close_final_turn(jinja(messages), rule)
        return rendered.text, supervised_spans(rendered, messages, rule)
    except (TemplateError, RuleMismatch):
        return None


def same_supervision(render: TemplateRunner, a: MaskRule, b: MaskRule, conversations: list, special_tokens=()) -> bool:
    """Whether rules ``a`` and ``b`` give the same text and supervised spans through the Jinja path on every one of
    ``conversations`` (and refuse the same ones)."""
    jinja_a, jinja_b = _renderer(render, a, special_tokens), _renderer(render, b, special_tokens)
    return all(_masked(jinja_a, a, m) == _masked(jinja_b, b, m) for _, m in conversations)
