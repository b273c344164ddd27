"""Which renderer writes a profile's conversations: the family's native renderer where it reproduces the tokenizer's
own chat template on the probe conversations, else the template through Jinja once the rule is proved on it; what the
template is given besides the messages (its clock pinned or refused); the rule (the profile's, or inferred from the
template) and its checks; which message fields each renderer writes."""

from __future__ import annotations

from typing import Callable

from sftpack.base.errors import UsageError
from sftpack.base.refs import resolve
from sftpack.families.conversation import FIELDS
from sftpack.families.fields import FieldRouting, tool_span_check, written_fields
from sftpack.families.jinja import MAX_RENDERED_CHARS
from sftpack.families.mask import RuleMismatch, close_final_turn, supervised_spans
from sftpack.families.profiles import INFERRED, MaskRule, Profile
from sftpack.families.render import Renderer, TemplateError
from sftpack.families.template_vars import jinja_variables, refused_clock, unpinned_clock
from sftpack.tokenizers.vocab import Vocab


def choose_renderer(profile: Profile, vocab: Vocab, rule: MaskRule) -> tuple[Renderer, str]:
    """The native renderer of the profile's template family when it reproduces the tokenizer's own chat
    template on the probe conversations (or the tokenizer has none); else the template through Jinja, once the
    rule is proved on it where no native renderer vouches for where turns end."""
    from sftpack.families.template_match import probe_conversations

    native = profile.family.renderer(profile.template_options)  # None: a family whose template is rendered through Jinja
    template = vocab.info.chat_template
    if template is None:
        if native is None:
            raise UsageError(f"{profile.model}: no native {profile.template!r} renderer and the tokenizer has no chat_template")
        unproven = f"; unproven: {profile.template_unavailable}" if profile.template_unavailable else ""
        return native, f"native {profile.template} renderer (official template; the tokenizer has no chat_template{unproven})"
    jinja = _jinja_renderer(profile, vocab, template, rule)
    if native is None:
        proof = _prove(profile, vocab, rule)
        return jinja, f"the tokenizer's chat_template through Jinja (family {profile.template}: no native renderer; {proof})"
    if reproduces(native, jinja.text_of):
        return native, (f"native {profile.template} renderer (equal to the tokenizer's chat_template on "
                        f"{len(probe_conversations())} probe conversations)")
    differs = f"differs from the native {profile.template} renderer"
    if rule.final_turn_end:  # no end-of-turn token: where a turn ends is the proof's to show
        differs += f"; {_prove(profile, vocab, rule)}"
    return jinja, f"the tokenizer's chat_template through Jinja ({differs})"


def reproduces(native: Renderer, template: Callable[[list], str]) -> bool:
    """Whether ``native`` writes exactly what ``template`` (``messages -> text``) writes on every probe conversation,
    raising where it raises."""
    from sftpack.families.template_match import probe_conversations

    for conversation in probe_conversations():
        try:
            same = native(conversation).text == template(conversation)
        except TemplateError:
            same = _both_raise(native, template, conversation)
        if not same:
            return False
    return True


def template_variables(profile: Profile, vocab: Vocab) -> dict:
    """What the chat template is given besides the messages, as transformers gives it, and what it reads in place of
    the profile's template options (gpt-oss's pinned clock)."""
    variables = {"bos_token": _named(vocab, "bos"), "eos_token": vocab.eos_token}
    for name, option in profile.family.options.items():
        if option.jinja is not None:
            variables.update(resolve(option.jinja)(profile.template_options[name]))
    if profile.family.render is None:  # a jinja profile's template variables, its clock pinned to its date
        variables.update(jinja_variables(profile.template_options))
    for name, refused in refused_clock().items():  # a clock no option pins: reading it is refused, never the day's
        variables.setdefault(name, refused)
    return {k: v for k, v in variables.items() if v is not None}


def check_clock(profile: Profile, vocab: Vocab) -> None:
    """Refuse a jinja profile whose template reads the clock without a pinned date: its rows would depend on the day."""
    from sftpack.families.jinja import clock_calls

    template = vocab.info.chat_template
    if not template or profile.family.render is not None:
        return
    variables = template_variables(profile, vocab)
    unpinned = unpinned_clock(template, variables, clock_calls(template, variables))
    if unpinned:
        raise UsageError(f"{profile.path}: the chat template reads the clock ({', '.join(unpinned)}) and the profile "
                         "pins no date, so its rows would depend on the day they are built: add template_options: "
                         "{date: YYYY-MM-DD}")


def _jinja_renderer(profile: Profile, vocab: Vocab, template: str, rule: MaskRule):
    """The tokenizer's chat template through Jinja; a template that does not compile is the user's file, named."""
    from sftpack.families.jinja import ControlTextRewrite, JinjaRenderer

    where = vocab.info.chat_template_file or "the tokenizer's chat_template"
    try:
        return JinjaRenderer(template, rule, template_variables(profile, vocab), vocab.special_tokens,
                             max_chars=MAX_RENDERED_CHARS)
    except ControlTextRewrite as e:
        raise UsageError(f"{where}: {e}") from None
    except Exception as e:  # jinja2's TemplateSyntaxError and whatever else its compiler raises
        raise UsageError(f"{where}: the chat_template does not compile ({type(e).__name__}: {e})") from None


def _prove(profile: Profile, vocab: Vocab, rule: MaskRule) -> str:
    """Prove ``rule`` on the tokenizer's template (:mod:`sftpack.families.proof`), or one line naming the conversation
    and why it cannot be masked."""
    from sftpack.families.proof import ProofFailure, battery, prove
    from sftpack.families.infer import TemplateRunner

    template = vocab.info.chat_template
    written = tuple(t for t in vocab.special_tokens if t.strip() and t in template)  # the template's own tokens
    try:
        report = prove(TemplateRunner(template, template_variables(profile, vocab)), rule, battery(rule, written), written,
                       special_tokens=vocab.special_tokens)
    except ProofFailure as e:
        raise UsageError(f"{profile.model}: the tokenizer's chat template cannot be masked: {e}") from None
    return f"rule {rule.name!r} {report.line()}"


def rule_of(profile: Profile, vocab: Vocab) -> MaskRule:
    """The profile's rule; for ``loss_mask: inferred``, the rule inferred from the tokenizer's chat template."""
    if profile.loss_mask != INFERRED:
        return profile.rule
    from sftpack.families.infer import InferenceError, infer_rule

    if vocab.info.chat_template is None:
        raise UsageError(f"{profile.model}: its loss-mask rule is inferred from the checkpoint's chat template, and the "
                         f"tokenizer ({vocab.info.description}) has none: {where_to_get(profile)}")
    try:
        return infer_rule(vocab.info.chat_template, INFERRED, template_variables(profile, vocab)).rule
    except InferenceError as e:
        raise UsageError(f"{profile.model}: cannot infer a loss-mask rule from the tokenizer's chat template: {e}") from None


def where_to_get(profile: Profile) -> str:
    return (f"pass --tokenizer DIR, a copy of the tokenizer files of the hub repository {profile.hub_repo} with the "
            "checkpoint's chat template (in tokenizer_config.json or chat_template.jinja)")


def check_rule_fits(profile: Profile, render: Renderer, rule: MaskRule) -> None:
    """Refuse, naming the rule file, a loss-mask rule that places the turns of none of the probe conversations: its
    header or end marker is not what the template writes (a rule file a user wrote for a profile of their own).
    Some probes are odd (two assistant messages in a row) and a template may merge their turns: one is enough."""
    from sftpack.families.jinja import TurnNotFound
    from sftpack.families.template_match import probe_conversations

    misfit = None
    for conversation in probe_conversations():
        try:
            supervised_spans(close_final_turn(render(conversation), rule), conversation, rule)
            return
        except (TurnNotFound, RuleMismatch) as e:
            misfit = misfit or e
        except TemplateError:  # a conversation this template refuses says nothing about the rule
            continue
    if misfit is not None:
        raise UsageError(f"{rule.path or rule.name}: the loss-mask rule does not fit the turns the {profile.template} "
                         f"template writes ({misfit}): check its header, end_of_turn and after_end_of_turn")


def _both_raise(a, b, conversation) -> bool:
    raised = 0
    for render in (a, b):
        try:
            render(conversation)
        except TemplateError:
            raised += 1
    return raised == 2


def _named(vocab: Vocab, kind: str) -> str | None:
    return getattr(vocab, f"{kind}_token", None)


def field_routing(profile: Profile, vocab: Vocab, rule: MaskRule, render: Renderer) -> FieldRouting:
    """Which message fields ``render`` handles, which go through the tokenizer's template instead, and which the
    template writes nothing of (:mod:`sftpack.families.fields`)."""
    from sftpack.families.jinja import JinjaRenderer

    family, name, everything = profile.family, profile.template, frozenset(FIELDS)
    if isinstance(render, JinjaRenderer):  # the template renders every conversation
        written = written_fields(render.text_of)
        return FieldRouting(unrendered=everything - written, family=name, template_primary=True,
                            refused=tool_span_check(render) if "tool_calls" in written else "")
    template = vocab.info.chat_template
    if template is None:  # the family's own word for what its official template writes
        return FieldRouting(family.fields, None, family.unrendered, "tools" in family.fields, name)
    jinja = _jinja_renderer(profile, vocab, template, rule)
    native = family.fields if _agrees(render, jinja.text_of, family.fields) else frozenset()
    written = written_fields(jinja.text_of)
    refused = tool_span_check(jinja) if "tool_calls" in written and "tool_calls" not in native else ""
    return FieldRouting(native, jinja, everything - written, "tools" in native, name, refused=refused)


def _agrees(native: Renderer, template: Callable, fields: frozenset) -> bool:
    """Whether ``native`` writes what ``template`` (``(messages, tools) -> text``) writes on the field probes of
    ``fields``, raising where it raises: a tokenizer's template may render tool calls otherwise than the official one."""
    from sftpack.families.fields import field_probes

    for field, messages, tools in field_probes():
        if field not in fields:
            continue
        tools = tools if "tools" in fields else None
        args = {"tools": tools} if tools else {}
        if not _same(lambda m: native(m, **args).text, lambda m: template(m, tools), messages):
            return False
    return True


def _same(a: Callable, b: Callable, messages: list) -> bool:
    try:
        return a(messages) == b(messages)
    except TemplateError:
        return _both_raise(lambda m: a(m), lambda m: b(m), messages)
