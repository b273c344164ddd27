"""One conversation: check -> render -> mask spans -> tokenize.

    >>> out = encode_conversation([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
    ...                           model="Qwen3.5-122B-A10B")
    >>> len(out["tokens"]) == len(out["loss_mask"]), sum(out["loss_mask"])
    (True, 6)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.base.refs import resolve
from sftpack.families.conversation import FIELDS, Conversation, Skip, assistant_first, check_conversation
from sftpack.families.fields import FieldRouting, tool_span_check, written_fields
from sftpack.families.mask import RuleMismatch, close_final_turn, supervised_spans
from sftpack.families.profiles import INFERRED, MaskRule, Profile, load_profile
from sftpack.families.jinja import MAX_RENDERED_CHARS, JinjaRenderer, RenderTooLarge  # noqa: F401 (the cap, named here too)
from sftpack.families.template_vars import jinja_variables, options_text, refused_clock, unpinned_clock
from sftpack.families.render import Renderer, TemplateError
from sftpack.tokenizers.backend import trie_pattern
from sftpack.tokenizers.vocab import EncodeError, Vocab



@dataclass
class ConversationEncoder:
    """Everything needed to turn source messages into (token ids, loss mask); cheap to call."""

    vocab: Vocab
    render: Renderer
    rule: MaskRule
    renderer_description: str
    control_text: tuple[str, ...] = ()  # see control_text_of
    routing: FieldRouting = FieldRouting()  # which renderer writes which message fields

    def __post_init__(self):
        self._control_re = re.compile(trie_pattern(self.control_text)) if self.control_text else None
        self._control_first = frozenset(t[0] for t in self.control_text)

    def has_control_text(self, messages) -> bool:
        """Whether any text of the (checked) conversation holds control text: its messages' contents, reasoning,
        tool calls, and its tools (counted; it cannot move supervision)."""
        if not self.control_text:
            return False
        checked = messages if isinstance(messages, Conversation) else check_conversation(messages)
        if checked.fields:
            contents = "\x00".join(_texts(checked))
        else:  # role and content alone (the common case)
            contents = "\x00".join(m["content"] for m in checked.messages)
        # a substring test per first character (memchr-fast) skips the regex for most conversations
        return any(c in contents for c in self._control_first) and self._control_re.search(contents) is not None

    def prepare(self, messages) -> tuple[str, list[tuple[int, int]]]:
        """Rendered text and its supervised character spans, or :class:`Skip`."""
        text, spans, _ = self.examine(messages)
        return text, spans

    def examine(self, conversation) -> tuple[str, list[tuple[int, int]], Conversation]:
        """Rendered text, its supervised character spans and the checked conversation, or :class:`Skip`."""
        checked = check_conversation(conversation)
        if isinstance(self.render, JinjaRenderer) and assistant_first(checked.messages):
            raise Skip("assistant_first", "an assistant message comes before any user message")
        try:
            rendered = close_final_turn(self.routing.renderer(self.render, checked)(checked.messages), self.rule)
        except RenderTooLarge as e:
            raise Skip("rendered_too_large", f"{e} for one conversation (the cap)") from e
        except TemplateError as e:
            raise Skip("template_error", str(e)) from e
        if len(rendered.text) > MAX_RENDERED_CHARS:
            raise Skip("rendered_too_large", f"the conversation renders to {len(rendered.text):,} characters, more "
                                             f"than the cap of {MAX_RENDERED_CHARS:,}")
        return rendered.text, supervised_spans(rendered, checked.messages, self.rule), checked

    def notes(self, checked: Conversation) -> tuple[str, ...]:
        """What the build record counts of a kept conversation beside its tokens (see :meth:`FieldRouting.notes`)."""
        return self.routing.notes(checked)

    def __call__(self, messages) -> tuple[np.ndarray, np.ndarray]:
        text, spans = self.prepare(messages)
        try:
            return self.vocab.encode_masked(text, spans)
        except EncodeError as e:
            raise Skip("invalid_unicode", str(e)) from e

    def render_text(self, messages) -> str:
        checked = check_conversation(messages)
        return close_final_turn(self.routing.renderer(self.render, checked)(checked.messages), self.rule).text


def _texts(checked: Conversation):
    """Every text of a checked conversation that a template may write."""
    import json

    for m in checked.messages:
        yield m["content"]
        if "reasoning_content" in m:
            yield m["reasoning_content"]
        for call in m.get("tool_calls", ()):
            yield json.dumps(call, ensure_ascii=False)
        for key in ("tool_call_id", "name"):
            if key in m:
                yield m[key]
    if checked.tools:
        yield json.dumps(checked.tools, ensure_ascii=False)


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


def control_text_of(rule: MaskRule, vocab: Vocab) -> tuple[str, ...]:
    """Text that is control text for this build: every special (added) token of the tokenizer, whose text in
    content becomes that token's id, and the rule's markers. Whitespace-only added tokens are not control text."""
    return tuple(sorted({t for t in vocab.special_tokens if t.strip()} | set(rule.markers)))


_MARKER = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")  # <|im_start|>, <turn|>, [EOS]: written as one token each


def check_markers(profile: Profile, vocab: Vocab, rule: MaskRule) -> None:
    """Refuse a tokenizer without the family's header and end-of-turn markers as special tokens (another
    family's tokenizer): the markers would be tokenized as plain text, and the rows would be silently wrong."""
    wanted = {m for text in (*rule.header.split("{name}"), *rule.end_markers) for m in _MARKER.findall(text)}
    missing = sorted(m for m in wanted if m not in vocab.special_tokens)
    if missing:
        raise UsageError(
            f"the tokenizer ({vocab.info.description}) has no special token for {', '.join(missing)}, the "
            f"{profile.template} turn markers of {profile.model}: is it {profile.model}'s tokenizer?"
        )


def make_encoder(profile: Profile, vocab: Vocab) -> ConversationEncoder:
    _check_template_sha256(profile, vocab)
    check_clock(profile, vocab)
    rule = rule_of(profile, vocab)
    check_markers(profile, vocab, rule)
    render, description = choose_renderer(profile, vocab, rule)
    check_rule_fits(profile, render, rule)
    for name, option in profile.family.options.items():  # the record's `renderer` shows what the rows were rendered with
        if option.record:
            description += "; " + option.record.format(value=profile.template_options[name])
    if profile.family.render is None and profile.template_options:
        description += "; template variables: " + options_text(profile.template_options)
    if profile.loss_mask == INFERRED:  # the record names the rule the build inferred
        description += (f"; loss-mask rule inferred from it: header {rule.header!r}, skipped {list(rule.skips)!r}, "
                        f"end of turn {list(rule.end_markers)!r} then {rule.after_end_of_turn!r}")
    if rule.final_turn_end:  # the rows' text is not the template's alone: say so in the record
        description += f"; {rule.final_turn_end} appended after a final assistant turn (rule {rule.name})"
    return ConversationEncoder(vocab, render, rule, description, control_text_of(rule, vocab),
                               field_routing(profile, vocab, rule, render))


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


def _check_template_sha256(profile: Profile, vocab: Vocab) -> None:
    """A warning when the tokenizer's chat template is not the one the profile's rule was inferred from (the rule
    is still proved on it wherever no native renderer vouches for it)."""
    import hashlib

    from sftpack.tokenizers.loading import warn_once

    template = vocab.info.chat_template
    if profile.template_sha256 and template is not None:
        actual = hashlib.sha256(template.encode("utf-8")).hexdigest()
        if actual != profile.template_sha256:
            warn_once(f"{profile.model}: the tokenizer's chat template (sha256 {actual[:16]}...) is not the one its "
                      f"profile was proven against ({profile.template_sha256[:16]}...)")


def get_encoder(model: str, tokenizer: str | None = None) -> ConversationEncoder:
    """The encoder of ``model`` (a profile name) with its tokenizer (``tokenizer``: a local directory or
    tokenizer.json), loaded once per process and reused: loading ranks and probing the renderer take a second.
    A profile or rule file of the user's that changes makes a new one. ``encoder(messages)`` gives ``(token ids,
    loss mask)`` as numpy arrays."""
    profile = load_profile(model)
    rule = profile.rule if profile.loss_mask != INFERRED else None
    return _encoder(model, tokenizer, repr(profile), repr(rule))


@lru_cache(maxsize=16)
def _encoder(model: str, tokenizer: str | None, profile_text: str, rule_text: str) -> ConversationEncoder:
    """The encoder of ``get_encoder``, made once for each profile and rule as they read (``profile_text``,
    ``rule_text``)."""
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(model)
    return make_encoder(profile, load_vocab(profile, tokenizer))


get_encoder.cache_clear = _encoder.cache_clear  # the encoders made so far dropped


def encode_conversation(messages, model: str, tokenizer: str | None = None) -> dict:
    """Tokens and loss mask of one conversation (no packing, no EOS), with the cached :func:`get_encoder`.
    Raises :class:`Skip` for a conversation the build would skip."""
    ids, mask = get_encoder(model, tokenizer)(messages)
    return {"tokens": ids.tolist(), "loss_mask": mask.tolist()}
