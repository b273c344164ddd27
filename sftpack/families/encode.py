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

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.families.conversation import Conversation, Skip, assistant_first, check_conversation
from sftpack.families.fields import FieldRouting
from sftpack.families.mask import close_final_turn, supervised_spans
from sftpack.families.profiles import INFERRED, MaskRule, Profile, load_profile, users_own
from sftpack.families.jinja import MAX_RENDERED_CHARS, JinjaRenderer, RenderTooLarge  # noqa: F401 (the cap, named here too)
from sftpack.families.renderer_choice import check_clock, check_rule_fits, choose_renderer, field_routing, rule_of
from sftpack.families.template_vars import options_text
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
    if not users_own(profile):  # sftpack's own files do not change while it runs
        return _encoder(model, tokenizer, None, None)
    # the same objects for as long as the files read the same (profiles._as_it_reads)
    return _encoder(model, tokenizer, _Same(profile), _Same(profile.rule if profile.loss_mask != INFERRED else None))


class _Same:
    """An object compared by identity; a cache key holding it keeps it alive, so that its id is never another's."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Same) and other.value is self.value


@lru_cache(maxsize=16)
def _encoder(model: str, tokenizer: str | None, profile: _Same | None, rule: _Same | None) -> ConversationEncoder:
    """The encoder of ``get_encoder``, made once for each profile and rule (a file of the user's: as it reads)."""
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(model)
    return make_encoder(profile, load_vocab(profile, tokenizer))


get_encoder.cache_clear = _encoder.cache_clear  # the encoders made so far dropped


def encode_conversation(messages, model: str, tokenizer: str | None = None) -> dict:
    """Tokens and loss mask of one conversation (no packing, no EOS), with the cached :func:`get_encoder`.
    Raises :class:`Skip` for a conversation the build would skip."""
    ids, mask = get_encoder(model, tokenizer)(messages)
    return {"tokens": ids.tolist(), "loss_mask": mask.tolist()}
