"""What a template family is: everything sftpack knows of one family beyond its rule (``masks/``) and its profiles
(``configs/``), declared in one entry. Each family's module (``sftpack/families/FAMILY.py``) holds its renderer and
its entry; :mod:`sftpack.families.registry` collects them by name."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from sftpack.base.refs import Ref, resolve
from sftpack.tokenizers.registry import OfflineTokenizer

Conversation = tuple[tuple[str, str], ...]  # (role, content) pairs


@dataclass(frozen=True)
class TemplateOption:
    """A ``template_options`` key of the family's profiles, passed to the renderer as a keyword argument (each one
    required).

    ``check(value)``: raises ValueError for a value the template cannot take; the message says ``expected``.
    ``jinja(value) -> {name: object}``: what the tokenizer's own template sees for it when rendered through Jinja.
    ``record``: what the build record's ``renderer`` line adds, ``{value}`` standing for the value.
    ``default``: the value ``sftpack new-model`` writes into a new profile (the template's own default, a pinned date).
    """

    check: Ref
    expected: str
    jinja: Ref = None
    record: str = ""
    default: str = ""


@dataclass(frozen=True)
class Family:
    """One template family.

    ``render``: the native renderer (``messages -> Rendered``), or None: the tokenizer's own ``chat_template`` is
    rendered through Jinja. ``tokenizer``: the tokenizer format its files are loaded with
    (:data:`sftpack.tokenizers.registry.TOKENIZER_FORMATS`). ``options``: the ``template_options`` its renderer
    takes. ``offline``: the vocabularies available without the hub, by the name a profile gives as
    ``tokenizer.offline``. ``informational_files``: tokenizer files recorded with their sha256 and checked against
    the pins, but never run and never a reason to refuse the hub's files (Kimi's ``tokenization_kimi.py``).
    ``probes``: conversations that forge this family's turns in message content, rendered both ways before a
    tokenizer's own template is trusted to equal the native renderer (:mod:`sftpack.families.template_match`).
    ``fields``: the message fields beyond role and content (``sftpack.families.conversation.FIELDS``: reasoning, tool
    calls, tool results, tools, ...) the native renderer handles exactly as the official template does; a conversation
    using another goes through the tokenizer's template (Jinja), or is skipped (``needs_template``) without one.
    ``unrendered``: the fields the official template writes nothing of (counted as ``unrendered_fields``).
    """

    render: Ref = None
    tokenizer: str = "tokenizer.json"
    options: dict[str, TemplateOption] = field(default_factory=dict)
    offline: dict[str, OfflineTokenizer] = field(default_factory=dict)
    informational_files: tuple[str, ...] = ()
    probes: tuple[Conversation, ...] = ()
    fields: frozenset = frozenset()
    unrendered: frozenset = frozenset()

    def renderer(self, options: dict | None = None):
        """The native renderer, imported now, with the profile's ``template_options`` bound; None for a
        Jinja-only family."""
        render = resolve(self.render)
        if render is None or not options:
            return render
        return partial(render, **options)
