"""The template families sftpack knows, by the name a profile gives as ``template:``: the only place that knows
a family. Each family's module declares its entry (:class:`~sftpack.families.family.Family`: renderer, tokenizer
format, template options, offline vocabularies, tokenizer-file quirks, forgery probes); this table names them.
Tokenizer libraries load only when a family's vocabulary is used.

    >>> get_family("qwen3_5").tokenizer
    'tokenizer.json'
    >>> get_family("qwen3.5")
    Traceback (most recent call last):
    ...
    sftpack.base.refs.UnknownName: Unknown template family 'qwen3.5'; known: deepseek_v4, gemma4, glm4_5, glm4_7_flash, gpt_oss, jinja, kimi_k25, minimax_m2, nemotron3_nano, qwen3, qwen3_5, qwen3_8; did you mean qwen3_5 or qwen3?
"""

from __future__ import annotations

from sftpack.base.refs import lookup
from sftpack.families import deepseek_v4, gemma4, glm, gpt_oss, kimi, minimax, nemotron, qwen3, qwen3_5, qwen3_8
from sftpack.families.family import Family
from sftpack.families.render import Renderer
from sftpack.tokenizers.registry import OfflineTokenizer, get_tokenizer_format

FAMILIES: dict[str, Family] = {
    "qwen3_5": qwen3_5.FAMILY,
    "qwen3_8": qwen3_8.FAMILY,
    "gemma4": gemma4.FAMILY,
    "kimi_k25": kimi.FAMILY,
    "qwen3": qwen3.FAMILY,
    "gpt_oss": gpt_oss.FAMILY,
    "minimax_m2": minimax.FAMILY,
    "nemotron3_nano": nemotron.FAMILY,
    "glm4_5": glm.GLM4_5,
    "glm4_7_flash": glm.GLM4_7_FLASH,
    "deepseek_v4": deepseek_v4.FAMILY,
    # no native renderer: the checkpoint's own chat template through Jinja, its rule proved on it at every build (a
    # model whose rule `sftpack new-model` inferred, or a profile with loss_mask: inferred)
    "jinja": Family(),
}


def get_family(name: str) -> Family:
    return lookup(FAMILIES, "template family", name)


def register_family(name: str, family: Family) -> None:
    """Add a family at run time (a plugin); the table above is where sftpack's own families are listed."""
    if name in FAMILIES:
        raise ValueError(f"Duplicate template family {name!r}")
    get_tokenizer_format(family.tokenizer)  # fail now, not at the first build
    FAMILIES[name] = family


def offline_tokenizers() -> dict[str, OfflineTokenizer]:
    """Every offline vocabulary some family declares, by name: what a profile's ``tokenizer.offline`` may name (a
    model of another template may share a family's vocabulary)."""
    return {name: offline for family in FAMILIES.values() for name, offline in family.offline.items()}


def offline_tokenizer_names() -> list[str]:
    return sorted(offline_tokenizers())


def get_renderer(family: str) -> Renderer:
    """The native renderer of a template family (see :data:`FAMILIES`); ``KeyError`` when the
    family has none (its template is rendered through Jinja)."""
    render = get_family(family).renderer()
    if render is None:
        raise KeyError(f"no native renderer for template family {family!r}")
    return render
