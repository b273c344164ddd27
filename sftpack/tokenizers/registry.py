"""The tokenizer file formats by name, and what an offline vocabulary is (entries are lazy ``"module:attribute"``
references, so reading them imports no tokenizer library)."""

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
    """A vocabulary available without the hub (a family declares its own; a profile names one as
    ``tokenizer.offline``): ``load(eos_token) -> Vocab``; ``description`` is what the warning says is used instead
    of the pinned files."""

    load: Ref
    description: str


def get_tokenizer_format(name: str) -> TokenizerFormat:
    return lookup(TOKENIZER_FORMATS, "tokenizer format", name)
