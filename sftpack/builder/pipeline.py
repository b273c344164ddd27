"""The build: read -> check/render/mask/tokenize -> pack -> write (docs/spec.md, "Packing").

Conversations are encoded in chunks by ``workers`` processes, in permutation order, only as far as the rows
need (a bounded number of chunks in flight); results are consumed strictly in order, so the output does not
depend on ``workers``.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from contextlib import nullcontext
from functools import partial
from typing import Iterator

import numpy as np

from sftpack.base import huge_pages
from sftpack.base.errors import UsageError
from sftpack.builder import interrupts
from sftpack.builder.config import ALL, DEFAULTS, BuildConfig, hub_dataset
from sftpack.builder.chunks import ChunkResult, chunk_task, encode_chunk, engine_thread
from sftpack.families.encode import ConversationEncoder, make_encoder
from sftpack.builder.output import OutputFiles
from sftpack.builder.pack import pack_chunks
from sftpack.builder.progress import Clock, Progress
from sftpack.builder.stream_names import build_source_tag, output_name
from sftpack.builder.record import BuildRecord, BuildStats, OutputPaths, make_record
from sftpack.sources import open_source
from sftpack.sources.base import Source, SourceChanged
from sftpack.sources.pins import TULU_REPO, TULU_REVISION
from sftpack.builder.workers import WorkerDied, WorkerPool
from sftpack.builder.walk import Walk
from sftpack.builder.writer_process import WriterProcess, separate
from sftpack.families.profiles import load_profile
from sftpack.rows.formats import get_row_format, new_row_writer
from sftpack.tokenizers.loading import load_vocab
from sftpack.tokenizers.vocab import Vocab

# Conversations per task. Each chunk costs the parent a few fixed steps on its one packing thread (receiving the
# result, sending the next task, splicing the chunk into the stream), which at 16 workers is the build's serial
# part; small enough that little work is wasted when the rows are complete (3 tasks in flight per worker).
CHUNK = 256
# The first chunk's conversations; the chunks then double up to CHUNK: a build of a few rows encodes about what its
# rows need (a 1-row sample build reads 9 conversations) instead of 3 full chunks a worker.
FIRST_CHUNK = 16
LEAD_TOKENS = 1 << 20  # builds of at most this many tokens encode their first chunks before forking (see _lead)


def encoded_chunks(
    encoder: ConversationEncoder, source: Source, order: np.ndarray, workers: int, walk: Walk,
    seconds: Counter | None = None, lead: int = 0,
) -> Iterator[tuple[list, np.ndarray, np.ndarray, np.ndarray]]:
    """Each chunk's kept conversations ``(ids, lengths, tokens, masks)`` in ``order``, for
    :func:`~sftpack.builder.pack.pack_chunks`; ``walk`` counts the skips. ``seconds`` (profiling) sums the parent's wait
    for results and the workers' seconds by stage. ``lead``: chunks encoded here before any worker starts (a build
    that needs only those forks none)."""
    chunks = (order[start:stop] for start, stop in chunk_bounds(len(order)))
    seconds = seconds if seconds is not None else Counter()

    def consume(result: ChunkResult):
        stages = ("worker_read_s", "worker_prepare_s", "worker_tokenize_s", "worker_mask_s")
        for stage, spent in zip(stages, result.seconds):
            seconds[stage] += spent
        yield walk.add(result)

    # A memory-mapped source is read in a worker even with one: a file cut short under its map kills the reader
    # with SIGBUS, which the parent then outlives to explain (and to remove the temporaries).
    for chunk in itertools.islice(chunks, 0 if source.memory_mapped else None if workers <= 1 else lead):
        yield from consume(encode_chunk(encoder, source, chunk))
    if (first := next(chunks, None)) is None:
        return
    chunks = itertools.chain([first], chunks)

    # Forked workers inherit the loaded tokenizer and the (memory-mapped) source (nothing is pickled); tasks carry
    # only row indices. Signals are only recorded while they run and raised at the pool's checks (sftpack.builder.interrupts).
    task = chunk_task(encoder, source, overlap=engine_thread(workers, _usable_cores()))
    with interrupts.deferred(), WorkerPool(max(workers, 1), task) as pool:
        results = pool.imap(chunks, depth=3 * workers)
        while True:
            t = time.perf_counter()
            result = next(results, None)
            seconds["result_wait_s"] += time.perf_counter() - t
            if result is None:
                return
            yield from consume(result)


def chunk_bounds(n: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of each chunk of ``n`` conversations: FIRST_CHUNK, twice that, ... then CHUNK each."""
    start, size = 0, FIRST_CHUNK
    while start < n:
        yield start, min(start + size, n)
        start, size = start + size, min(2 * size, CHUNK)


def _usable_cores() -> int:
    # the CPUs this process may run on (a container's limit), not every CPU of the host
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def permutation(n: int, seed: int) -> np.ndarray:
    """The order of source rows: ``numpy.random.default_rng(seed).permutation(n)`` (docs/spec.md, "Packing", item 1), which is
    the order of ``datasets.Dataset.shuffle(seed=seed)``."""
    return np.random.default_rng(seed).permutation(n)


def build(config: BuildConfig, *, vocab: Vocab | None = None, source: Source | None = None) -> BuildRecord:
    """Build the rows and write ``OUT/NAME.parquet`` + ``OUT/NAME.build.yaml``; returns the build record.

    ``vocab`` and ``source``: ready objects to build with instead of loading the profile's tokenizer / opening
    ``config.source`` (the record describes them as they describe themselves).

    SIGINT (and SIGTERM under the command line) before the final renames raises
    :class:`sftpack.builder.interrupts.Interrupted` with nothing written; one after them leaves a complete build."""
    with interrupts.guarded():
        return _build(config, vocab, source)


def _build(config: BuildConfig, vocab: Vocab | None, source: Source | None) -> BuildRecord:
    profile = load_profile(config.model)
    resolved = config.resolved(profile.defaults)
    rows, row_tokens, seed = resolved["rows"], resolved["row_tokens"], resolved["seed"]
    every_row = rows == ALL
    workers = config.workers or _usable_cores()
    revision = _dataset_revision(config)
    published = {key: profile.defaults.get(key, default) for key, default in DEFAULTS.items()}
    names = output_name(profile.build_name, published, explicit=config.name, rows=rows, row_tokens=row_tokens,
                        seed=seed, source=build_source_tag(config.source, source, revision))
    name = names.name
    row_format = get_row_format(config.format)
    outputs = OutputFiles(config.out, names.stem, config.overwrite, row_format.suffix)
    # check the output directory before the slow steps, and the cluster (--ray) before loading anything
    with outputs, _encoding(config, profile, vocab, source) as encoding:
        clock = Clock()
        large = every_row or rows * row_tokens >= huge_pages.PAYS_FROM_TOKENS
        vocab, encoder, source, order = _start(config, profile, vocab, source, revision, seed, large, clock)
        stats = BuildStats()
        writer = WriterProcess(partial(new_row_writer, config.format, outputs.tmp_parquet, row_tokens, name), row_tokens,
                               separate(None if every_row else rows, workers))
        try:
            # inside the try: a signal can also land in _write_rows' `finally` (stopping the workers) after the last
            # row has gone to the writer process, which must then be killed before the temporaries are removed
            _write_rows(encoding, encoder, source, order, writer, stats, rows, row_tokens, workers, config, clock)
            interrupts.check()  # a signal recorded while the workers were being stopped
            _check_source_unchanged(source)
            _check_row_count(writer.rows, stats, rows, row_tokens)
            parquet_sha256, parquet_bytes = writer.close()
            clock.mark("close_s")
            record = make_record(
                profile=profile, vocab=vocab, encoder=encoder, source=source, name=name, rows=writer.rows,
                row_tokens=row_tokens, seed=seed, rows_sha256=writer.rows_sha256, supervised=writer.supervised,
                stats=stats, parquet=(parquet_sha256, parquet_bytes), every_row=every_row, rows_format=config.format,
                tokenizer=config.tokenizer)
            outputs.commit(record)
            record.paths = OutputPaths(outputs.parquet, outputs.record)
        except BaseException:
            writer.abort()  # its file is open: a full disk gets its space back only once it is closed
            raise
        clock.mark("commit_s")
    clock.report(workers, writer, record)
    return record


def _start(config: BuildConfig, profile, vocab: Vocab | None, source: Source | None, revision: str | None, seed: int,
           large: bool, clock: Clock) -> tuple[Vocab, ConversationEncoder, Source, np.ndarray]:
    """The build's start-up: the source opened, the tokenizer and its engines loaded, the renderer chosen, the
    permutation drawn. ``large``: the engines' tables are moved onto huge pages (:mod:`sftpack.base.huge_pages`)."""
    # A local source is opened first, so that its errors come before any tokenizer warning (its sha256 computed
    # aside meanwhile); the hub dataset is only downloaded once the tokenizer has passed its pin checks.
    remote = config.source == "hub" or hub_dataset(config.source)
    if source is None and not remote:
        source = open_source(config.source, revision=revision, sharegpt=config.sharegpt, hash_aside=True)
    clock.mark("open_source_s")
    if vocab is None:
        vocab = load_vocab(profile, config.tokenizer, allow_unpinned=config.allow_unpinned)
    before, collapsing = huge_pages.anonymous_memory() if large else None, []
    # quicktok's tables are collapsed from the moment they are allocated, beside tiktoken's core (the wait: 0.1 s -> 0)
    vocab.use_backend(config.tokenizer_backend, lambda: collapsing.extend(huge_pages.collapse(huge_pages.new_memory(before))))
    clock.mark("load_vocab_s")
    encoder = make_encoder(profile, vocab)
    clock.mark("choose_renderer_s")
    source = source or open_source(config.source, revision=revision, sharegpt=config.sharegpt)
    order = permutation(len(source), seed)
    clock.mark("open_hub_and_permute_s")
    for thread in collapsing:  # before anything forks
        thread.join()
    source.info.sha256  # read: the hash computed aside is collected before anything forks
    clock.mark("huge_pages_s")
    return vocab, encoder, source, order


def _dataset_revision(config: BuildConfig) -> str | None:
    """``--dataset-revision``: for ``--source hub`` only the pinned Tulu 3 one unless ``--allow-unpinned``."""
    revision = config.dataset_revision
    if config.source == "hub" and revision not in (None, TULU_REVISION) and not config.allow_unpinned:
        raise UsageError(
            f"--dataset-revision {config.dataset_revision} is not the pinned {TULU_REPO} revision {TULU_REVISION}; "
            "pass --allow-unpinned to build from it anyway"
        )
    return revision


def _encoding(config: BuildConfig, profile, vocab: Vocab | None, source: Source | None):
    """Who encodes the chunks: forked workers on this machine, or tasks on a Ray cluster (``--ray``)."""
    if config.ray is None:
        return nullcontext(encoded_chunks)
    from sftpack.builder.cluster import ray_encoding

    return ray_encoding(config, profile, given=(vocab, source))


def _write_rows(encoding, encoder: ConversationEncoder, source: Source, order: np.ndarray, writer: WriterProcess,
                stats: BuildStats, rows, row_tokens: int, workers: int, config: BuildConfig, clock: Clock) -> None:
    """Encode (``encoding``: :func:`encoded_chunks` or its like), pack and write rows until ``rows`` are written
    (or, ``--rows all``, the source ends)."""
    progress = Progress(None if rows == ALL else rows, len(source), row_tokens, stats, config.progress)
    walk = Walk(stats, config.strict)
    stream = encoding(encoder, source, order, workers, walk, clock.seconds, lead=_lead(rows, row_tokens, config.workers))
    try:
        for row in pack_chunks(stream, row_tokens, encoder.vocab.eos_id, stats, walk.pulled):
            writer.write(row)
            progress.row()
            if writer.rows == rows:
                break
        stream.close()
        clock.mark("loop_s")
    except WorkerDied as e:  # a worker reading a memory map cut short dies of SIGBUS: say why (the caller aborts)
        raise UsageError(source.changed() or f"{e}; nothing written") from None
    finally:
        stream.close()  # stops the workers now, also when an error is on its way
        progress.close()


def _lead(rows, row_tokens: int, asked: int | None) -> int:
    """Chunks a build encodes before it forks its workers: without ``--workers``, the first three (112 conversations)
    when it asks for at most LEAD_TOKENS (a 1-row sample build took 0.02 s in its loop against 0.32 s with 2 workers
    forked), else none."""
    return 3 if asked is None and rows != ALL and rows * row_tokens <= LEAD_TOKENS else 0


def _check_source_unchanged(source: Source) -> None:
    """A source file that changed while the build ran is refused even when every row the build used was read
    before the change: the rows would describe a file that no longer exists, and whether a change is caught
    must not depend on how far the workers had read ahead."""
    why = source.changed()
    if why:
        raise SourceChanged(why)


def _check_row_count(written: int, stats: BuildStats, rows, row_tokens: int) -> None:
    if rows == ALL and written == 0:
        raise UsageError(f"--rows all: the source holds no full row ({stats.tail_tokens:,} tokens, "
                         f"{stats.rows_dropped_unsupervised} rows without targets; a row is {row_tokens:,} tokens)"
                         + _top_skips(stats))
    if stats.reached == 0:
        raise UsageError(f"the source holds no rows (asked for {rows}): nothing to build; give a source with "
                         "conversations in it")
    if rows != ALL and written < rows:
        raise UsageError(f"source exhausted after {written} rows (asked for {rows})" + _top_skips(stats))


def _top_skips(stats: BuildStats) -> str:
    if not stats.skipped:
        return ""
    top = ", ".join(f"{reason} {n:,}" for reason, n in stats.skipped.most_common(3))
    return f"; {sum(stats.skipped.values()):,} of the {stats.reached:,} conversations reached were skipped ({top})"
