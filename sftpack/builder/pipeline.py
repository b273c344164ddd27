"""The build: read -> check/render/mask/tokenize -> pack -> write (docs/spec.md, "Packing").

Conversations are encoded in chunks by ``workers`` processes, in permutation order, only as far as the rows
need (a bounded number of chunks in flight); results are consumed strictly in order, so the output does not
depend on ``workers``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass
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
from sftpack.builder.names import output_name
from sftpack.builder.record import BuildRecord, BuildStats, OutputPaths, make_record
from sftpack.sources import open_source
from sftpack.sources.base import Source, SourceChanged
from sftpack.sources.pins import TULU_REPO, TULU_REVISION
from sftpack.builder.workers import WorkerDied, WorkerPool
from sftpack.builder.writer_process import WriterProcess
from sftpack.families.profiles import load_profile
from sftpack.rows.formats import get_row_format, new_row_writer
from sftpack.tokenizers.loading import load_vocab
from sftpack.tokenizers.vocab import Vocab

# Conversations per task. Each chunk costs the parent a few fixed steps on its one packing thread (receiving the
# result, sending the next task, splicing the chunk into the stream), which at 16 workers is the build's serial
# part; small enough that little work is wasted when the rows are complete (3 tasks in flight per worker).
CHUNK = 256


@dataclass
class _WalkedChunk:
    """A chunk the walk has not yet passed: its first source row, the source rows of its kept conversations, its
    skips ``(source row, (reason, detail), id)``, the kept indices holding control text, and how many of each the
    walk has counted."""

    start: int
    kept_rows: list
    skips: list
    control: list
    skips_counted: int = 0
    control_counted: int = 0


class Walk:
    """The walk over the source in permutation order: skips and control text are counted as the packer reaches
    them (``pulled(n)``: ``n`` kept conversations pulled; ``None``: the source ended), as if conversations were
    pulled one by one; with ``strict`` the first skip reached is the error."""

    def __init__(self, stats: BuildStats, strict: bool = False):
        self.stats, self.strict = stats, strict
        self.chunks: deque[_WalkedChunk] = deque()
        self.rows = 0  # source rows handed to the packer
        self.kept = 0
        self.kept_passed = 0  # kept conversations of the chunks the walk has passed (left self.chunks)
        self.unchecked: list = []  # ids of kept conversations from number unchecked_from on (checked for duplicates)
        self.unchecked_from = 0
        self.checked = 0
        self.fast: deque = deque()  # per chunk not yet pulled past: (first kept index, running count of its fast flags)

    def add(self, result: ChunkResult) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """Register a chunk; its kept conversations ``(ids, lengths, tokens, masks)`` for the packer."""
        kept = [p for p, status in enumerate(result.status) if status is None]
        index = {p: self.kept + i for i, p in enumerate(kept)}
        skips = [(self.rows + p, status, result.ids[p]) for p, status in enumerate(result.status) if status is not None]
        control = sorted(index[p] for p in result.control_text)
        self.chunks.append(_WalkedChunk(self.rows, [self.rows + p for p in kept], skips, control))
        self.rows += len(result.status)
        self.kept += len(kept)
        ids = [result.ids[p] for p in kept]
        self.unchecked.extend(ids)
        if result.fast is not None and result.fast.any():
            # counted once here: the packer asks for the count at every row
            self.fast.append((self.kept - len(kept), np.cumsum(result.fast, dtype=np.int64).tolist()))
        return ids, result.lengths, result.tokens, result.masks

    def pulled(self, n: int | None) -> None:
        stats = self.stats
        if n is None:
            upto, n = self.rows, self.kept
        else:
            upto = stats.reached  # conversation n was in a chunk already walked past
            first_kept = self.kept_passed
            for chunk in self.chunks:
                if 0 < n - first_kept <= len(chunk.kept_rows):
                    upto = chunk.kept_rows[n - first_kept - 1] + 1
                    break
                first_kept += len(chunk.kept_rows)
        while self.chunks:
            chunk = self.chunks[0]
            while chunk.skips_counted < len(chunk.skips) and chunk.skips[chunk.skips_counted][0] < upto:
                _, (reason, detail), conv_id = chunk.skips[chunk.skips_counted]
                if self.strict:
                    raise UsageError(f"--strict: conversation {conv_id!r}: {reason}: {detail}")
                stats.skipped[reason] += 1
                chunk.skips_counted += 1
            while chunk.control_counted < len(chunk.control) and chunk.control[chunk.control_counted] < n:
                stats.control_text += 1  # counted as reached, like the skips
                chunk.control_counted += 1
            end = chunk.start + len(chunk.kept_rows) + len(chunk.skips)
            if end > upto or chunk.control_counted < len(chunk.control):
                break
            self.kept_passed += len(self.chunks.popleft().kept_rows)
        stats.reached = upto
        self._count_fast(n)
        if self.checked < n:  # two packed conversations with one id: provenance cannot tell them apart
            # a slice's ids at once: the ones not new are those the set did not grow by (0.37 of the time one by one)
            ids = self.unchecked[self.checked - self.unchecked_from : n - self.unchecked_from]
            seen = stats.ids_seen
            before = len(seen)
            seen.update(ids)
            stats.duplicate_ids += len(ids) - (len(seen) - before)
            self.checked = n
            if self.checked - self.unchecked_from > 4 * 4096:
                del self.unchecked[: self.checked - self.unchecked_from]
                self.unchecked_from = self.checked


    def _count_fast(self, n: int) -> None:
        """``stats.fast``: how many of the first ``n`` kept conversations the faster engine encoded."""
        stats = self.stats
        while self.fast and self.fast[0][0] < n:
            first, counted = self.fast[0]
            done = min(n - first, len(counted))
            stats.fast = stats.fast_before + counted[done - 1]
            if done < len(counted):
                return
            stats.fast_before = stats.fast
            self.fast.popleft()


def encoded_chunks(
    encoder: ConversationEncoder, source: Source, order: np.ndarray, workers: int, walk: Walk,
    seconds: Counter | None = None,
) -> Iterator[tuple[list, np.ndarray, np.ndarray, np.ndarray]]:
    """Each chunk's kept conversations ``(ids, lengths, tokens, masks)`` in ``order``, for
    :func:`~sftpack.builder.pack.pack_chunks`; ``walk`` counts the skips. ``seconds`` (profiling) sums the parent's wait
    for results and the workers' seconds by stage."""
    chunks = (order[i : i + CHUNK] for i in range(0, len(order), CHUNK))
    seconds = seconds if seconds is not None else Counter()

    def consume(result: ChunkResult):
        stages = ("worker_read_s", "worker_prepare_s", "worker_tokenize_s", "worker_mask_s")
        for stage, spent in zip(stages, result.seconds):
            seconds[stage] += spent
        yield walk.add(result)

    # A memory-mapped source is read in a worker even with one: a file cut short under its map kills the reader
    # with SIGBUS, which the parent then outlives to explain (and to remove the temporaries).
    if workers <= 1 and not source.memory_mapped:
        for chunk in chunks:
            yield from consume(encode_chunk(encoder, source, chunk))
        return

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
                        seed=seed)
    name = names.name
    row_format = get_row_format(config.format)
    outputs = OutputFiles(config.out, names.stem, config.overwrite, row_format.suffix)
    with outputs:  # check the output directory before the slow steps
        # A local source is opened first, so that its errors come before any tokenizer warning; the hub dataset
        # is only downloaded once the tokenizer has passed its pin checks.
        clock = _Clock()
        remote = config.source == "hub" or hub_dataset(config.source)
        if source is None and not remote:
            source = open_source(config.source, revision=revision, sharegpt=config.sharegpt)
        clock.mark("open_source_s")
        if vocab is None:
            vocab = load_vocab(profile, config.tokenizer, allow_unpinned=config.allow_unpinned)
        heap = huge_pages.heap_end()
        vocab.use_backend(config.tokenizer_backend)  # before the workers fork: they share it
        collapsing = huge_pages.collapse_grown_heap(heap)  # the engines' tables, beside the rest of the start-up
        clock.mark("load_vocab_s")
        encoder = make_encoder(profile, vocab)
        clock.mark("choose_renderer_s")
        source = source or open_source(config.source, revision=revision, sharegpt=config.sharegpt)
        order = permutation(len(source), seed)
        clock.mark("open_hub_and_permute_s")
        stats = BuildStats()
        collapsing.join()  # before anything forks
        clock.mark("huge_pages_s")
        writer = WriterProcess(partial(new_row_writer, config.format, outputs.tmp_parquet, row_tokens, name), row_tokens)
        try:
            # inside the try: a signal can also land in _write_rows' `finally` (stopping the workers) after the last
            # row has gone to the writer process, which must then be killed before the temporaries are removed
            _write_rows(encoder, source, order, writer, stats, rows, row_tokens, workers, config, clock)
            interrupts.check()  # a signal recorded while the workers were being stopped
            _check_source_unchanged(source)
            _check_row_count(writer.rows, stats, rows, row_tokens)
            parquet_sha256, parquet_bytes = writer.close()
            clock.mark("close_s")
            record = make_record(
                profile=profile, vocab=vocab, encoder=encoder, source=source, name=name, rows=writer.rows,
                row_tokens=row_tokens, seed=seed, rows_sha256=writer.rows_sha256, supervised=writer.supervised,
                stats=stats, parquet=(parquet_sha256, parquet_bytes), every_row=every_row, rows_format=config.format,
            )
            outputs.commit(record)
            record.paths = OutputPaths(outputs.parquet, outputs.record)
        except BaseException:
            writer.abort()  # its file is open: a full disk gets its space back only once it is closed
            raise
        clock.mark("commit_s")
    clock.report(workers, writer, record)
    return record


def _dataset_revision(config: BuildConfig) -> str | None:
    """``--dataset-revision``: for ``--source hub`` only the pinned Tulu 3 one unless ``--allow-unpinned``."""
    revision = config.dataset_revision
    if config.source == "hub" and revision not in (None, TULU_REVISION) and not config.allow_unpinned:
        raise UsageError(
            f"--dataset-revision {config.dataset_revision} is not the pinned {TULU_REPO} revision {TULU_REVISION}; "
            "pass --allow-unpinned to build from it anyway"
        )
    return revision


def _write_rows(encoder: ConversationEncoder, source: Source, order: np.ndarray, writer: WriterProcess, stats: BuildStats,
                rows, row_tokens: int, workers: int, config: BuildConfig, clock: "_Clock") -> None:
    """Encode, pack and write rows until ``rows`` are written (or, ``--rows all``, the source ends)."""
    progress = Progress(None if rows == ALL else rows, len(source), row_tokens, stats, config.progress)
    walk = Walk(stats, config.strict)
    stream = encoded_chunks(encoder, source, order, workers, walk, clock.seconds)
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
    if rows != ALL and written < rows:
        raise UsageError(f"source exhausted after {written} rows (asked for {rows})" + _top_skips(stats))


def _top_skips(stats: BuildStats) -> str:
    if not stats.skipped:
        return ""
    top = ", ".join(f"{reason} {n:,}" for reason, n in stats.skipped.most_common(3))
    return f"; {sum(stats.skipped.values()):,} of the {stats.reached:,} conversations reached were skipped ({top})"


class _Clock:
    """Where a build's wall time goes: written as JSON to the file named by ``SFTPACK_TIMINGS`` when it is set (a
    user setting, see the README; never into the outputs, which must not depend on time)."""

    def __init__(self):
        self.last = time.perf_counter()
        self.phases: dict[str, float] = {}
        self.seconds: Counter = Counter()  # the parent's wait for results, the workers' seconds by stage

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = now - self.last
        self.last = now

    def report(self, workers: int, writer: WriterProcess, record: BuildRecord) -> None:
        path = os.environ.get("SFTPACK_TIMINGS")
        if not path:
            return
        import json

        parent = {**self.phases, **{k: v for k, v in self.seconds.items() if not k.startswith("worker_")},
                  **{f"writer_{k}": v for k, v in writer.timings.items()}}
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"workers": workers, "parent": parent,
                       "workers_total": {k: v for k, v in self.seconds.items() if k.startswith("worker_")},
                       "tokens": record.counts.total_tokens, "rows": record.rows}, f, indent=1)


class Progress:
    """The bar on stderr: rows written, conversations read and tokens/s; with ``--rows all`` (``rows`` None) the
    bar is the fraction of the source's conversations consumed, since the number of rows is not known ahead."""

    def __init__(self, rows: int | None, source_rows: int, row_tokens: int, stats: BuildStats, enabled: bool):
        from tqdm import tqdm

        self.stats, self.row_tokens, self.every_row = stats, row_tokens, rows is None
        total, unit = (source_rows, "conv") if self.every_row else (rows, "row")
        self.bar = tqdm(total=total, unit=unit, desc="sftpack build", file=sys.stderr, disable=not enabled,
                        dynamic_ncols=True)
        self.rows = 0
        self._start = self._shown = time.monotonic()

    def row(self) -> None:
        self.rows += 1
        if self.bar.disable:
            return
        if self.every_row:
            self.bar.update(self.stats.reached - self.bar.n)
        else:
            self.bar.update(1)
        now = time.monotonic()
        if now - self._shown >= 0.5:  # formatting on every row would cost more than the rows at 16 workers
            self._shown = now
            self._postfix(now)

    def _postfix(self, now: float) -> None:
        rate = self.rows * self.row_tokens / max(now - self._start, 1e-9)
        what = f"{self.rows:,} rows" if self.every_row else f"{self.stats.reached:,} conv"
        self.bar.set_postfix_str(f"{what}, {rate / 1e6:.2f} Mtok/s", refresh=False)

    def close(self) -> None:
        if not self.bar.disable:  # the last line shows the final counts, not those of the last refresh
            if self.every_row:
                self.bar.update(self.stats.reached - self.bar.n)
            self._postfix(time.monotonic())
        self.bar.close()
