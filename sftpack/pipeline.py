"""The build: read -> check/render/mask/tokenize -> pack -> write (SPEC rules 1-11).

Conversations are encoded in chunks by ``workers`` processes, in permutation order, only as far as the rows
need (a bounded number of chunks in flight); results are consumed strictly in order, so the output does not
depend on ``workers``.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import multiprocessing as mp
import numpy as np

from .conversation import Skip
from .encode import ConversationEncoder, make_encoder
from .errors import UsageError
from .pack import PackStats, pack
from .profiles import TULU_REPO, TULU_REVISION, Profile, load_profile
from .source import RowError, Source, open_source
from .vocab_loading import load_vocab
from .write import OutputFiles, Ratio, RowWriter

MAX_ROW_TOKENS = 1 << 24  # provenance offsets are int32; a 16M-token row is already far past any trainer
MAX_WORKERS = 256
CHUNK = 128  # conversations per task: small enough that little work is wasted when the rows are complete



@dataclass
class BuildConfig:
    model: str
    source: str = "hub"
    tokenizer: str | None = None
    rows: int | None = None
    row_tokens: int | None = None
    seed: int | None = None
    out: str = "."
    name: str | None = None
    workers: int | None = None
    overwrite: bool = False
    strict: bool = False
    allow_unpinned: bool = False
    dataset_revision: str | None = None  # None: the pinned Tulu 3 revision (--source hub only)
    progress: bool = True


@dataclass
class ChunkResult:
    """Encoded conversations of one chunk, flattened so that they cross process boundaries cheaply."""

    ids: list  # source conversation ids, one per conversation in the chunk
    status: list  # None when kept, else (reason, detail)
    lengths: np.ndarray  # token count per kept conversation
    tokens: np.ndarray
    masks: np.ndarray
    control_text: tuple = ()  # positions in the chunk of kept conversations whose contents hold control text


_ENCODER: ConversationEncoder | None = None
_SOURCE: Source | None = None


def encode_chunk(indices: np.ndarray) -> ChunkResult:
    """Read and encode the source rows ``indices`` (runs in a worker, or inline with one worker)."""
    encoder, source = _ENCODER, _SOURCE
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


@dataclass
class WalkStats:
    skipped: Counter = field(default_factory=Counter)
    control_text: int = 0
    reached: int = 0  # source rows reached in the order (kept + skipped)
    first_skip: tuple | None = None


def encoded_conversations(
    encoder: ConversationEncoder, source: Source, order: np.ndarray, workers: int, stats: WalkStats, strict: bool = False
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """Kept conversations in ``order`` as ``(id, tokens, mask)``, counting skips as they are reached."""
    global _ENCODER, _SOURCE
    _ENCODER, _SOURCE = encoder, source
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
            yield from consume(encode_chunk(chunk))
        return
    # fork: workers inherit the loaded tokenizer and the (memory-mapped) source instead of re-loading them.
    context = mp.get_context("fork")
    depth = 3 * workers
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(os.getpid(),)) as pool:
        pending = []
        try:
            for chunk in chunks:
                pending.append(pool.submit(encode_chunk, chunk))
                if len(pending) >= depth:
                    yield from consume(pending.pop(0).result())
            while pending:
                yield from consume(pending.pop(0).result())
        finally:
            for f in pending:
                f.cancel()


def _worker_init(parent: int) -> None:
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
    """The order of source rows: ``numpy.random.default_rng(seed).permutation(n)`` (SPEC rule 1), which is
    the order of ``datasets.Dataset.shuffle(seed=seed)``."""
    return np.random.default_rng(seed).permutation(n)


def build(config: BuildConfig) -> dict:
    """Build the rows and write ``OUT/NAME.parquet`` + ``OUT/NAME.build.yaml``; returns the build record."""
    profile = load_profile(config.model)
    rows = config.rows if config.rows is not None else profile.defaults.get("rows", 6400)
    row_tokens = config.row_tokens if config.row_tokens is not None else profile.defaults.get("row_tokens", 8192)
    seed = config.seed if config.seed is not None else profile.defaults.get("seed", 42)
    if rows < 1:
        raise UsageError(f"--rows must be at least 1 (got {rows})")
    if row_tokens < 2:
        raise UsageError(f"--row-tokens must be at least 2: position 0 is never a target (got {row_tokens})")
    if seed < 0:
        raise UsageError(f"--seed must be a non-negative integer (got {seed})")  # numpy's default_rng refuses it
    workers = config.workers or _usable_cores()
    if workers < 1:
        raise UsageError(f"--workers must be at least 1 (got {workers})")
    if row_tokens > MAX_ROW_TOKENS:
        raise UsageError(f"--row-tokens must be at most {MAX_ROW_TOKENS:,} (got {row_tokens:,})")
    if workers > MAX_WORKERS:
        raise UsageError(f"--workers must be at most {MAX_WORKERS} (got {workers})")
    if config.name is not None and (not config.name or "/" in config.name or config.name.startswith(".")):
        raise UsageError(f"--name {config.name!r}: a plain file name is needed (no '/', not empty, not starting with '.')")
    if config.dataset_revision is not None and config.source != "hub":
        raise UsageError(f"--dataset-revision applies to --source hub only (the source is {config.source})")
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
        source = open_source(config.source, revision=revision) if config.source != "hub" else None
        vocab = load_vocab(profile, config.tokenizer, allow_unpinned=config.allow_unpinned)
        encoder = make_encoder(profile, vocab)
        source = source or open_source(config.source, revision=revision)
        order = permutation(len(source), seed)
        walk, packed = WalkStats(), PackStats()
        writer = RowWriter(outputs.tmp_parquet, row_tokens, name)
        progress = _progress(rows, config.progress)
        try:
            stream = encoded_conversations(encoder, source, order, workers, walk, config.strict)
            for row in pack(stream, row_tokens, vocab.eos_id, packed):
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
        record = build_record(
            profile, vocab, encoder, source, name, rows, row_tokens, seed, writer, walk, packed,
            parquet_sha256, parquet_bytes, config,
        )
        outputs.commit(record)
    return record


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="row", desc="sftpack build", file=sys.stderr, disable=not enabled, dynamic_ncols=True)


def build_record(profile: Profile, vocab, encoder, source, name, rows, row_tokens, seed, writer, walk, packed,
                 parquet_sha256, parquet_bytes, config) -> dict:
    """The build record: the recipe's ``workload.dataset.build`` fields first, then exact counts."""
    info = vocab.info
    tokenizer_pinned = bool(info.pins) and all(state == "match" for state in info.pins.values()) and info.source == "hub"
    dataset_pinned = source.info.location == "hub" and source.info.revision == TULU_REVISION
    total = rows * row_tokens
    files = "; ".join(f"{f} sha256 {h}" for f, h in info.files.items())
    return {
        "name": name,
        "tokenizer": f"{info.description} ({files})",
        "loss_mask": profile.loss_mask,
        "rows": rows,
        "row_tokens": row_tokens,
        "padding_tokens": 0,
        "seed": seed,
        "packing": (
            "source conversations in a seeded global permutation, concatenated with an EOS token "
            f"({vocab.eos_token}) between them and cut into consecutive {row_tokens:,}-token rows; "
            "rows without supervised targets are skipped"
        ),
        "supervised_token_ratio": Ratio(round(writer.supervised / total, 6)),
        "parquet_sha256": parquet_sha256,
        "parquet_bytes": parquet_bytes,
        "builder": f"sftpack {version('sftpack') if _installed() else 'source checkout'} (sftpack build --model {profile.model})",
        "rows_sha256": writer.rows_sha256,
        "model": profile.model,
        "dataset": {
            "name": "Tulu 3 SFT mixture" if source.info.location == "hub" else source.info.dataset,
            "source": TULU_REPO if source.info.location == "hub" else source.info.location,
            "revision": source.info.revision,
            "source_rows": len(source),
        },
        "counts": {
            "supervised_tokens": int(writer.supervised),
            "total_tokens": total,
            "conversations_packed": packed.conversations,
            "source_rows_reached": walk.reached,
            "rows_dropped_without_targets": packed.rows_dropped_unsupervised,
            "conversations_with_control_text": walk.control_text,
            "skipped": dict(sorted(walk.skipped.items())),
        },
        "tokenizer_files": dict(info.files),
        "tokenizer_source": info.source,
        "pins": dict(info.pins),
        "pinned": tokenizer_pinned and dataset_pinned,  # the recipe's exact inputs: pinned tokenizer files and dataset
        "tokenizer_pinned": tokenizer_pinned,
        "dataset_pinned": dataset_pinned,
        "eos_token": vocab.eos_token,
        "eos_token_id": int(vocab.eos_id),
        "renderer": encoder.renderer_description,
        "versions": {
            "sftpack": version("sftpack") if _installed() else "source checkout",
            "pyarrow": version("pyarrow"),
            "tiktoken": version("tiktoken"),
            "tokenizers": version("tokenizers"),
        },
    }


def _installed() -> bool:
    try:
        version("sftpack")
        return True
    except Exception:
        return False
