"""What a Ray task of a build runs: a contiguous range of the seeded permutation, read and encoded as one chunk by
the very steps a local worker runs (:func:`~sftpack.builder.chunks.encode_chunk`), returned as the same
:class:`~sftpack.builder.chunks.ChunkResult`: each conversation's token, mask and length arrays and its skip, if
any. Nothing in a result depends on the node, the worker or the attempt, so a retried task gives the same bytes.

A worker process makes the build's encoder and opens its source once (a :func:`warm` task sent as the driver
starts, or its first task) and keeps them for the next tasks (Ray reuses its worker processes), then checks that
what it made is what the driver made: the same profile, rule, tokenizer files, renderer and source size. A node that
sees another tokenizer or another source file refuses with one line instead of writing other rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.builder.chunks import ChunkResult, encode_chunk
from sftpack.families.encode import ConversationEncoder, make_encoder
from sftpack.sources import open_source
from sftpack.sources.base import Source, SourceChanged
from sftpack.families.profiles import Profile, load_profile
from sftpack.tokenizers.loading import load_vocab


@dataclass(frozen=True)
class Load:
    """How a worker makes the build's encoder and source: the build's own options."""

    key: str  # the build's (the driver makes it): a worker keeps one build's encoder and source
    model: str
    tokenizer: str | None
    allow_unpinned: bool
    backend: str
    source: str
    revision: str | None
    sharegpt: bool


@dataclass(frozen=True)
class Work:
    """A build's :class:`Load`, and what the driver made of it (:func:`fingerprint`)."""

    load: Load
    expected: tuple


def fingerprint(profile: Profile, encoder: ConversationEncoder, source: Source) -> tuple:
    """``(what, value)`` pairs of everything a worker's encoder and source must share with the driver's: the
    profile (where it was read from aside), the loss-mask rule, the tokenizer's files, the renderer, the source."""
    vocab = encoder.vocab
    return (("the model profile", dataclasses.replace(profile, path=None)),
            ("the loss-mask rule", encoder.rule),
            ("the tokenizer", (vocab.info.description, vocab.info.files, vocab.eos_token)),
            ("the renderer", encoder.renderer_description),
            ("the source", (len(source), source.info)))


_LOADED: dict[str, tuple] = {}  # this worker process's (profile, encoder, source), for one build
_CHECKED: set[str] = set()  # the builds whose driver's fingerprint this process's encoder and source matched


def loaded(load: Load) -> tuple:
    """``(profile, encoder, source)`` of ``load``, made by this process's first task of the build and kept."""
    if load.key not in _LOADED:
        _LOADED.clear()  # another build's: a worker serves one build at a time
        profile = load_profile(load.model)
        vocab = load_vocab(profile, load.tokenizer, allow_unpinned=load.allow_unpinned)
        vocab.use_backend(load.backend)
        source = open_source(load.source, revision=load.revision, sharegpt=load.sharegpt)
        _LOADED[load.key] = profile, make_encoder(profile, vocab), source
    return _LOADED[load.key]


def warm(load: Load) -> None:
    """Make the build's encoder and source in this worker process while the driver makes its own (the tokenizer's
    start-up, seconds, then overlaps the driver's instead of following it). A failure here is left for the first
    task, which makes them again and reports it."""
    try:
        loaded(load)
    except Exception:
        pass


def ready(work: Work) -> tuple[ConversationEncoder, Source]:
    """The encoder and source of ``work``, checked against the driver's."""
    profile, encoder, source = loaded(work.load)
    if work.load.key not in _CHECKED:
        for (what, mine), (_, driver) in zip(fingerprint(profile, encoder, source), work.expected):
            if mine != driver:
                raise UsageError(f"{what} this node loads is not the driver's ({_short(mine)} against "
                                 f"{_short(driver)}): every node must see the same files")
        _CHECKED.clear()
        _CHECKED.add(work.load.key)
    return encoder, source


def encode_range(work: Work, indices: np.ndarray) -> ChunkResult:
    """Source rows ``indices`` (a contiguous range of the permutation), encoded as one chunk: a conversation's tokens
    do not depend on the chunk it is encoded in, nor do the rows on where the chunks are cut."""
    encoder, source = ready(work)
    result = encode_chunk(encoder, source, indices)
    why = source.changed()  # a file cut short or rewritten under this node's reader
    if why:
        raise SourceChanged(why)
    return result


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
