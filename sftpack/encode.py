"""One conversation: check -> render -> mask spans -> tokenize.

    >>> out = encode_conversation([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
    ...                           model="Qwen3.5-122B-A10B")
    >>> len(out["tokens"]) == len(out["loss_mask"]), sum(out["loss_mask"])
    (True, 6)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .conversation import Skip, check_messages
from .errors import UsageError
from .mask import supervised_spans
from .profiles import MaskRule, Profile, load_profile
from .render import Renderer, TemplateError, get_renderer
from .vocab import EncodeError, Vocab


@dataclass
class ConversationEncoder:
    """Everything needed to turn source messages into (token ids, loss mask); cheap to call, picklable."""

    vocab: Vocab
    render: Renderer
    rule: MaskRule
    renderer_description: str

    def prepare(self, messages) -> tuple[str, list[tuple[int, int]]]:
        """Rendered text and its supervised character spans, or :class:`Skip`."""
        clean = check_messages(messages)
        try:
            rendered = self.render(clean)
        except TemplateError as e:
            raise Skip("template_error", str(e)) from None
        return rendered.text, supervised_spans(rendered, clean, self.rule)

    def __call__(self, messages) -> tuple[np.ndarray, np.ndarray]:
        text, spans = self.prepare(messages)
        try:
            return self.vocab.encode_masked(text, spans)
        except EncodeError as e:
            raise Skip("invalid_unicode", str(e)) from None

    def render_text(self, messages) -> str:
        return self.render(check_messages(messages)).text


def choose_renderer(profile: Profile, vocab: Vocab) -> tuple[Renderer, str]:
    """The native renderer of the profile's template family when it reproduces the tokenizer's own chat
    template on the probe conversations (or the tokenizer has none); else the template through Jinja."""
    from .render.probe import PROBE_CONVERSATIONS

    try:
        native = get_renderer(profile.template)
    except KeyError:  # a family without a native renderer: its chat template through Jinja
        native = None
    template = vocab.info.chat_template
    if template is None:
        if native is None:
            raise UsageError(f"{profile.model}: no native {profile.template!r} renderer and the tokenizer has no chat_template")
        return native, f"native {profile.template} renderer (official template; the tokenizer has no chat_template)"
    from .render.jinja import JinjaRenderer

    rule = profile.rule
    markers = [t for t in vocab.special_tokens if t in rule.header or t in rule.end_of_turn]
    variables = {"bos_token": _named(vocab, "bos"), "eos_token": vocab.eos_token}
    jinja = JinjaRenderer(template, rule, {k: v for k, v in variables.items() if v is not None}, markers)
    if native is None:
        return jinja, f"the tokenizer's chat_template through Jinja (no native {profile.template} renderer)"
    for conversation in PROBE_CONVERSATIONS:
        try:
            same = native(conversation).text == jinja(conversation).text
        except TemplateError:
            same = _both_raise(native, jinja, conversation)
        if not same:
            return jinja, f"the tokenizer's chat_template through Jinja (differs from the native {profile.template} renderer)"
    return native, f"native {profile.template} renderer (equal to the tokenizer's chat_template on {len(PROBE_CONVERSATIONS)} probe conversations)"


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


def make_encoder(profile: Profile, vocab: Vocab) -> ConversationEncoder:
    render, description = choose_renderer(profile, vocab)
    return ConversationEncoder(vocab, render, profile.rule, description)


def encode_conversation(messages, model: str, tokenizer: str | None = None) -> dict:
    """Tokens and loss mask of one conversation (no packing, no EOS). Raises :class:`Skip` for a
    conversation the build would skip."""
    from .vocab_loading import load_vocab

    profile = load_profile(model)
    encoder = make_encoder(profile, load_vocab(profile, tokenizer))
    ids, mask = encoder(messages)
    return {"tokens": ids.tolist(), "loss_mask": mask.tolist()}
