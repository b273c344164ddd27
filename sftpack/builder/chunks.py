"""One chunk of conversations, read and encoded: in a worker process, or inline with one worker.

A chunk is three steps: :func:`prepare_chunk` (read the source rows, check, render, find the supervised spans, and
the tokenizer's own Python half, :meth:`~sftpack.tokenizers.vocab.Vocab.plan_batch`: all of it holds the GIL),
:func:`tokenize_chunk` (the tokenizer engine's calls alone, which quicktok and tiktoken run without the GIL) and
:func:`finish_chunk` (the ids put together and the mask: numpy). A worker runs ``tokenize_chunk`` of one chunk on a
thread while it prepares the next, and ``finish_chunk`` back on its own thread (:class:`~sftpack.builder.workers.Steps`);
the result is the same as running them one after the other, which a worker does where no core is left for the
thread (:func:`engine_thread`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from sftpack.families.conversation import Skip
from sftpack.families.encode import ConversationEncoder
from sftpack.sources.base import RowError, Source
from sftpack.builder.workers import Steps
from sftpack.tokenizers.vocab import PlannedBatch


@dataclass
class ChunkResult:
    """Encoded conversations of one chunk, flattened so that they cross process boundaries cheaply."""

    ids: list  # source conversation ids, one per conversation in the chunk
    status: list  # None when kept, else (reason, detail)
    lengths: np.ndarray  # token count per kept conversation
    tokens: np.ndarray  # the kept conversations' tokens, each preceded by one EOS token: the packer's stream
    masks: np.ndarray  # their loss masks (0 at every EOS)
    control_text: tuple = ()  # (position in the chunk, notes) of kept conversations with something the record counts:
    # "control_text" (their texts hold control text), "unrendered_fields:F", "unknown_fields:K"
    seconds: tuple = (0.0, 0.0, 0.0, 0.0)  # worker time reading, preparing (check/render/spans), tokenizing, masking
    fast: np.ndarray | None = None  # per kept conversation: encoded by the faster engine alone (the record counts them)

    # Pickled, the masks go as bits, so that a typical chunk (0.89 MB, not 1.09) fits a pipe's 1 MiB in one write.
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["masks"] = (np.packbits(self.masks), len(self.masks))  # masks are 0/1
        return state

    def __setstate__(self, state: dict) -> None:
        bits, count = state["masks"]
        self.__dict__.update(state, masks=np.unpackbits(bits, count=count))


@dataclass
class PreparedChunk:
    """A chunk after :func:`prepare_chunk`: every conversation's id and status, the kept ones' texts and spans planned
    for the tokenizer."""

    ids: list
    status: list
    plan: PlannedBatch
    kept: list  # position in the chunk of each text
    control: list  # (position, notes) of kept conversations the record counts something of
    seconds: tuple  # reading, preparing


def prepare_chunk(encoder: ConversationEncoder, source: Source, indices: np.ndarray) -> PreparedChunk:
    """Read the source rows ``indices``; check and render each conversation and find its supervised spans."""
    ids, status = [], []
    texts, spans, kept = [], [], []
    control = []
    t0 = time.perf_counter()
    items = source.take(indices)
    t1 = time.perf_counter()
    for item in items:
        if isinstance(item, RowError):
            ids.append(item.row_id)
            status.append((item.reason, item.detail))
            continue
        conv_id, messages = item
        ids.append(conv_id)
        try:
            text, text_spans, checked = encoder.examine(messages)
        except Skip as skip:
            status.append((skip.reason, skip.detail))
            continue
        notes = encoder.notes(checked)
        if encoder.has_control_text(checked):
            notes = ("control_text", *notes)
        if notes:
            control.append((len(status), notes))
        status.append(None)
        kept.append(len(status) - 1)
        texts.append(text)
        spans.append(text_spans)
    # Planned here, so that it overlaps the previous chunk's encoding instead of adding to it: on 8,000 synthetic
    # conversations (Qwen3.5, one thread) it is 0.2-0.3 s of the 1.1 s that tokenizing took in one step.
    plan = encoder.vocab.plan_batch(texts, spans)
    return PreparedChunk(ids, status, plan, kept, control, (t1 - t0, time.perf_counter() - t1))


@dataclass
class TokenizedChunk:
    """A prepared chunk and its tokenizer engine's output (:meth:`~sftpack.tokenizers.vocab.Vocab.tokenize_planned`)."""

    prepared: PreparedChunk
    tokenized: object
    seconds: float


def tokenize_chunk(encoder: ConversationEncoder, prepared: PreparedChunk) -> TokenizedChunk:
    """The tokenizer engine's calls for a prepared chunk: nothing else, so that on a thread it holds the GIL only
    to start and to return."""
    t = time.perf_counter()
    tokenized = encoder.vocab.tokenize_planned(prepared.plan)
    return TokenizedChunk(prepared, tokenized, time.perf_counter() - t)


def finish_chunk(encoder: ConversationEncoder, chunk: TokenizedChunk) -> ChunkResult:
    """The ids and masks of a tokenized chunk; a text that cannot be encoded is a skip (``invalid_unicode``)."""
    t = time.perf_counter()
    prepared = chunk.prepared
    status, control = prepared.status, prepared.control
    batch = encoder.vocab.mask_planned(prepared.plan, chunk.tokenized)
    for i, message in batch.errors.items():
        status[prepared.kept[i]] = ("invalid_unicode", message)
    if batch.errors:  # control text is counted for kept conversations only
        control = [(p, notes) for p, notes in control if status[p] is None]
    lengths = np.delete(batch.lengths, list(batch.errors)) if batch.errors else batch.lengths
    fast = batch.fast if batch.fast is not None else np.zeros(len(batch.lengths), dtype=bool)
    fast = np.delete(fast, list(batch.errors)) if batch.errors else fast
    # the EOS tokens between conversations go in here, in parallel: in the parent's one packing thread they took 15%
    eos = encoder.vocab.eos_id
    tokens, masks = with_separator(batch.tokens, lengths, eos), with_separator(batch.masks, lengths, 0)
    seconds = (*prepared.seconds, chunk.seconds, time.perf_counter() - t)
    return ChunkResult(prepared.ids, status, lengths, tokens, masks, tuple(control), seconds, fast)


def with_separator(values: np.ndarray, lengths: np.ndarray, separator: int) -> np.ndarray:
    """``values``, the concatenation of runs of ``lengths``, with ``separator`` before each run.

    >>> with_separator(np.array([1, 2, 3, 4, 5]), np.array([3, 0, 2]), 9).tolist()
    [9, 1, 2, 3, 9, 9, 4, 5]
    """
    out = np.empty(len(values) + len(lengths), dtype=values.dtype)
    at = np.cumsum(lengths + 1) - lengths - 1  # where each separator lands
    out[at] = separator
    rest = np.ones(len(out), dtype=bool)
    rest[at] = False
    out[rest] = values
    return out


def encode_chunk(encoder: ConversationEncoder, source: Source, indices: np.ndarray) -> ChunkResult:
    """Read and encode the source rows ``indices``: the three steps, one after the other."""
    return finish_chunk(encoder, tokenize_chunk(encoder, prepare_chunk(encoder, source, indices)))


def chunk_task(encoder: ConversationEncoder, source: Source, overlap: bool = True) -> Callable:
    """The workers' task: row indices -> :class:`ChunkResult`, in steps that overlap across chunks (``overlap``), or
    one after the other."""
    if not overlap:
        return partial(encode_chunk, encoder, source)
    return Steps(lambda indices: prepare_chunk(encoder, source, indices),
                 lambda prepared: tokenize_chunk(encoder, prepared),
                 lambda tokenized: finish_chunk(encoder, tokenized))


def engine_thread(workers: int, cores: int) -> bool:
    """Whether each worker runs its tokenizer engine on a thread of its own, beside the Python of its next chunk:
    only where a core is left for that thread. With as many workers as cores the thread only adds waits for the GIL
    (2 workers on 2 cores build in 0.91 of the time in sequence). Either way the bytes are the same.

    >>> engine_thread(1, 2), engine_thread(2, 2), engine_thread(16, 16), engine_thread(8, 16)
    (True, False, False, True)
    """
    return workers < cores
