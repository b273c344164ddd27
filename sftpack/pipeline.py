"""The build: read -> check/render/mask/tokenize -> pack -> write (README "Packing and hash specification").

Conversations are encoded in chunks by ``workers`` processes, in permutation order, only as far as the rows
need (a bounded number of chunks in flight); results are consumed strictly in order, so the output does not
depend on ``workers``.
"""

from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import multiprocessing as mp
import numpy as np

from .config import MAX_ROW_TOKENS, MAX_WORKERS, BuildConfig  # noqa: F401  (re-exported)
from .conversation import Skip
from .encode import ConversationEncoder, make_encoder
from .errors import UsageError
from .pack import pack
from .profiles import TULU_REPO, TULU_REVISION, load_profile
from .record import BuildRecord, BuildStats, make_record
from .source import RowError, Source, open_source
from .vocab import Vocab
from .vocab_loading import load_vocab
from .write import OutputFiles, RowWriter

CHUNK = 128  # conversations per task: small enough that little work is wasted when the rows are complete


@dataclass
class ChunkResult:
    """Encoded conversations of one chunk, flattened so that they cross process boundaries cheaply."""

    ids: list  # source conversation ids, one per conversation in the chunk
    status: list  # None when kept, else (reason, detail)
    lengths: np.ndarray  # token count per kept conversation
    tokens: np.ndarray
    masks: np.ndarray
    control_text: tuple = ()  # positions in the chunk of kept conversations whose contents hold control text


def encode_chunk(encoder: ConversationEncoder, source: Source, indices: np.ndarray) -> ChunkResult:
    """Read and encode the source rows ``indices`` (in a worker, or inline with one worker)."""
    ids, status = [], []
    texts, spans, kept = [], [], []  # kept: position in the chunk of each text
    control = []
    for item in source.take(indices):
        if isinstance(item, RowError):
            ids.append(item.row_id)
            status.append((item.reason, item.detail))
            continue
        conv_id, messages = item
        ids.append(conv_id)
        try:
            text, text_spans = encoder.prepare(messages)
        except Skip as skip:
            status.append((skip.reason, skip.detail))
            continue
        if encoder.has_control_text(messages):
            control.append(len(status))
        status.append(None)
        kept.append(len(status) - 1)
        texts.append(text)
        spans.append(text_spans)
    batch = encoder.vocab.encode_masked_batch(texts, spans)
    for i, message in batch.errors.items():
        status[kept[i]] = ("invalid_unicode", message)
    lengths = np.delete(batch.lengths, list(batch.errors)) if batch.errors else batch.lengths
    return ChunkResult(ids, status, lengths, batch.tokens, batch.masks, tuple(control))


def encoded_conversations(
    encoder: ConversationEncoder, source: Source, order: np.ndarray, workers: int, stats: BuildStats, strict: bool = False
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Kept conversations in ``order`` as ``(id, tokens, mask)``, counting skips as they are reached."""
    chunks = (order[i : i + CHUNK] for i in range(0, len(order), CHUNK))

    def consume(result: ChunkResult):
        bounds = np.concatenate(([0], np.cumsum(result.lengths)))
        k = 0
        control = set(result.control_text)
        for position, (conv_id, status) in enumerate(zip(result.ids, result.status)):
            stats.reached += 1
            if status is not None:
                if strict:
                    raise UsageError(f"--strict: conversation {conv_id!r}: {status[0]}: {status[1]}")
                stats.skipped[status[0]] += 1
                continue
            a, b = bounds[k], bounds[k + 1]
            k += 1
            stats.control_text += position in control  # counted as reached, like the skips
            yield conv_id, result.tokens[a:b], result.masks[a:b]

    if workers <= 1:
        for chunk in chunks:
            yield from consume(encode_chunk(encoder, source, chunk))
        return
    # fork: each worker inherits the loaded tokenizer and the (memory-mapped) source through its initializer's
    # arguments (a forked process gets them in memory; nothing is pickled); tasks carry only row indices.
    context = mp.get_context("fork")
    depth = 3 * workers
    init = (os.getpid(), encoder, source)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=init) as pool:
        pending = []
        try:
            for chunk in chunks:
                pending.append(pool.submit(_encode_in_worker, chunk))
                if len(pending) >= depth:
                    yield from consume(pending.pop(0).result())
            while pending:
                yield from consume(pending.pop(0).result())
        finally:
            for f in pending:
                f.cancel()


_WORKER: tuple = ()  # (encoder, source), set in each forked worker by _worker_init; never in the parent


def _encode_in_worker(indices: np.ndarray) -> ChunkResult:
    return encode_chunk(*_WORKER, indices)


def _worker_init(parent: int, encoder: ConversationEncoder, source: Source) -> None:
    global _WORKER
    _WORKER = (encoder, source)
    # Ctrl-C and SIGTERM are handled by the parent, which removes temporaries; workers just stop with the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A parent killed outright (SIGKILL) takes its workers along: an orphaned worker would wait forever on the
    # task queue, holding the output lock (inherited with fork) so that every re-run is refused.
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)


def _usable_cores() -> int:
    # the CPUs this process may run on (a container's limit), not every CPU of the host
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def permutation(n: int, seed: int) -> np.ndarray:
    """The order of source rows: ``numpy.random.default_rng(seed).permutation(n)`` (README "Packing and hash specification", item 1), which is
    the order of ``datasets.Dataset.shuffle(seed=seed)``."""
    return np.random.default_rng(seed).permutation(n)


def build(config: BuildConfig, *, vocab: Vocab | None = None, source: Source | None = None) -> BuildRecord:
    """Build the rows and write ``OUT/NAME.parquet`` + ``OUT/NAME.build.yaml``; returns the build record.

    ``vocab`` and ``source``: ready objects to build with instead of loading the profile's tokenizer / opening
    ``config.source`` (the record describes them as they describe themselves)."""
    profile = load_profile(config.model)
    resolved = config.resolved(profile.defaults)
    rows, row_tokens, seed = resolved["rows"], resolved["row_tokens"], resolved["seed"]
    workers = config.workers or _usable_cores()
    revision = config.dataset_revision or TULU_REVISION
    if revision != TULU_REVISION and not config.allow_unpinned:
        raise UsageError(
            f"--dataset-revision {config.dataset_revision} is not the pinned {TULU_REPO} revision {TULU_REVISION}; "
            "pass --allow-unpinned to build from it anyway"
        )
    name = config.name or profile.build_name
    outputs = OutputFiles(config.out, name, config.overwrite)
    with outputs:  # check the output directory before the slow steps
        # A local source is opened first, so that its errors come before any tokenizer warning; the hub dataset
        # is only downloaded once the tokenizer has passed its pin checks.
        if source is None and config.source != "hub":
            source = open_source(config.source, revision=revision)
        if vocab is None:
            vocab = load_vocab(profile, config.tokenizer, allow_unpinned=config.allow_unpinned)
        encoder = make_encoder(profile, vocab)
        source = source or open_source(config.source, revision=revision)
        order = permutation(len(source), seed)
        stats = BuildStats()
        writer = RowWriter(outputs.tmp_parquet, row_tokens, name)
        progress = _progress(rows, config.progress)
        try:
            stream = encoded_conversations(encoder, source, order, workers, stats, config.strict)
            for row in pack(stream, row_tokens, vocab.eos_id, stats):
                writer.write(row)
                progress.update(1)
                if writer.rows == rows:
                    break
            stream.close()
        finally:
            progress.close()
        if writer.rows < rows:
            writer.close()
            raise UsageError(f"source exhausted after {writer.rows} rows (asked for {rows})")
        parquet_sha256, parquet_bytes = writer.close()
        record = make_record(
            profile=profile, vocab=vocab, encoder=encoder, source=source, name=name, rows=rows, row_tokens=row_tokens,
            seed=seed, rows_sha256=writer.rows_sha256, supervised=writer.supervised, stats=stats,
            parquet=(parquet_sha256, parquet_bytes),
        )
        outputs.commit(record)
    return record


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="row", desc="sftpack build", file=sys.stderr, disable=not enabled, dynamic_ncols=True)
