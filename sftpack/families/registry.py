"""The template families sftpack knows, and how their tokenizers load: the only place that knows a family.

A profile (``configs/MODEL.yaml``) names its family with ``template:``; everything family-specific is found
here from that name. Entries name their code as ``"module:attribute"`` strings, imported when first used, so
that reading the table imports no renderer or tokenizer library (tiktoken's registry of constructors is the
model: one dict, "Unknown ..." and "Duplicate ..." errors).

    >>> get_family("qwen3_5").tokenizer
    'tokenizer.json'
    >>> get_family("qwen3.5")
    Traceback (most recent call last):
    ...
    sftpack.base.refs.UnknownName: Unknown template family 'qwen3.5'; known: deepseek_v4, gemma4, glm4_5, glm4_7_flash, gpt_oss, kimi_k25, minimax_m2, nemotron3_nano, qwen3, qwen3_5
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sftpack.base.refs import Ref, lookup, resolve
from sftpack.tokenizers.registry import get_tokenizer_format


@dataclass(frozen=True)
class Family:
    """One template family.

    ``render``: the native renderer (``messages -> Rendered``), or None: the tokenizer's own ``chat_template``
    is rendered through Jinja. ``tokenizer``: the key of :data:`TOKENIZER_FORMATS` its tokenizer files are
    loaded with.
    """

    render: Ref = None
    tokenizer: str = "tokenizer.json"
    options: tuple[str, ...] = ()  # the profile's template_options the renderer takes as keyword arguments

    def renderer(self, options: dict | None = None):
        """The native renderer, imported now, with the profile's ``template_options`` bound; None for a
        Jinja-only family."""
        render = resolve(self.render)
        if render is None or not options:
            return render
        return partial(render, **options)


FAMILIES: dict[str, Family] = {
    "qwen3_5": Family(render="sftpack.families.qwen3_5:render"),
    "gemma4": Family(render="sftpack.families.gemma4:render"),
    "kimi_k25": Family(render="sftpack.families.kimi:render", tokenizer="kimi-tiktoken"),
    "qwen3": Family(render="sftpack.families.qwen3:render"),
    # the template reads the clock: the renderer takes the profile's pinned template_options.date
    "gpt_oss": Family(render="sftpack.families.gpt_oss:render", options=("date",)),
    "minimax_m2": Family(render="sftpack.families.minimax:render"),
    "nemotron3_nano": Family(render="sftpack.families.nemotron:render"),
    "glm4_5": Family(render="sftpack.families.glm:render_glm4_5"),
    "glm4_7_flash": Family(render="sftpack.families.glm:render_glm4_7_flash"),
    "deepseek_v4": Family(render="sftpack.families.deepseek_v4:render"),  # a port of the reference encoder
}


def get_family(name: str) -> Family:
    return lookup(FAMILIES, "template family", name)


def register_family(name: str, family: Family) -> None:
    """Add a family at run time (a plugin); the table above is where sftpack's own families are listed."""
    if name in FAMILIES:
        raise ValueError(f"Duplicate template family {name!r}")
    get_tokenizer_format(family.tokenizer)  # fail now, not at the first build
    FAMILIES[name] = family


