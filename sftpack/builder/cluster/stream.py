"""The driver's side of a build on a Ray cluster: the seeded permutation cut into contiguous ranges, one Ray task
each (:func:`~sftpack.builder.cluster.tasks.encode_range`), their results taken strictly in permutation order.

The driver hands the build's packer the same chunks, in the same order, as the local workers would: the rows, the
counts and so the bytes do not depend on the cluster's size, the placement of the tasks, the number of tasks or a
retried attempt. Results travel through Ray's object store; at most a window of tasks (two per CPU of the
cluster, 128 at most) is submitted and not yet consumed, so the driver's memory is bounded by the window, not by
the dataset.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter, deque
from typing import Iterator

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.builder.chunks import ChunkResult
from sftpack.builder.cluster.connect import named
from sftpack.builder.cluster.tasks import Load, Work, encode_range, fingerprint, warm
from sftpack.families.encode import ConversationEncoder
from sftpack.sources.base import Source

# Conversations per task: 1.7 M tokens of Tulu-like conversations, under a second of one CPU; a task's fixed cost
# (scheduling, one object in the store) is then a few thousandths of it. A small build gets smaller tasks, 4 per
# CPU and at least SMALLEST_TASK, so that every CPU has some. SFTPACK_RAY_TASK sets it (any size gives the same bytes).
TASK = 2048
SMALLEST_TASK = 256
TASKS_PER_CPU = 2  # submitted and not yet consumed: enough that no CPU waits while the driver takes a result
# At most this many (about 0.9 GB of Tulu-like results in the object store): the driver packs one task's 1.7 M
# tokens in about 35 ms (the local build's parent packs 48 Mtok/s), so 128 results are seconds of its work.
MAX_WINDOW = 128
RETRIES = 3  # attempts after a task's worker or node died; the same bytes each time


def task_size(conversations: int, cpus: int) -> int:
    """Conversations per task.

    >>> task_size(939_000, 16), task_size(3_000, 2), task_size(10, 2)
    (2048, 375, 256)
    """
    forced = os.environ.get("SFTPACK_RAY_TASK")
    if forced:
        return max(1, int(forced))
    return min(TASK, max(SMALLEST_TASK, -(-conversations // (4 * cpus))))


class RayEncoding:
    """Encoded chunks from tasks on a Ray cluster: called as :func:`sftpack.builder.pipeline.encoded_chunks` is,
    yielding each chunk's kept conversations ``(ids, lengths, tokens, masks)`` for the packer."""

    def __init__(self, ray, config, profile):
        self.ray, self.config, self.profile = ray, config, profile
        self.where = named(config.ray)
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.load = Load(uuid.uuid4().hex, config.model, config.tokenizer, config.allow_unpinned,
                         config.tokenizer_backend, config.source, config.dataset_revision, config.sharegpt)
        # one per CPU, sent before the driver loads its own tokenizer: the workers' start-up overlaps the driver's
        warming = ray.remote(warm).options(num_cpus=1, max_retries=0)
        self.warming = [warming.remote(self.load) for _ in range(min(self.cpus, MAX_WINDOW))]

    def __call__(self, encoder: ConversationEncoder, source: Source, order: np.ndarray, workers: int, walk,
                 seconds: Counter | None = None, lead: int = 0) -> Iterator[tuple]:
        """``workers`` and ``lead`` are the local build's (the cluster's CPUs encode here)."""
        ray, seconds = self.ray, seconds if seconds is not None else Counter()
        remote = ray.remote(encode_range).options(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)
        work = ray.put(Work(self.load, fingerprint(self.profile, encoder, source)))
        size = task_size(len(order), self.cpus)
        ranges = iter(range(0, len(order), size))
        pending: deque = deque()

        def submit() -> None:
            start = next(ranges, None)
            if start is not None:
                pending.append(remote.remote(work, order[start : start + size]))

        try:
            for _ in range(min(TASKS_PER_CPU * self.cpus, MAX_WINDOW)):
                submit()
            while pending:
                t = time.perf_counter()
                result = self._get(pending.popleft())
                seconds["result_wait_s"] += time.perf_counter() - t
                submit()
                yield self._consume(result, walk, seconds)
        finally:
            for ref in [*pending, *self.warming]:  # the rows are complete, or the build failed: the rest is not needed
                ray.cancel(ref)

    @staticmethod
    def _consume(result: ChunkResult, walk, seconds: Counter):
        stages = ("worker_read_s", "worker_prepare_s", "worker_tokenize_s", "worker_mask_s")
        for stage, spent in zip(stages, result.seconds):
            seconds[stage] += spent
        return walk.add(result)

    def _get(self, ref) -> ChunkResult:
        """A task's result; its failure as one line naming the cluster, the node and the reason."""
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            why = str(cause) if isinstance(cause, UsageError) else _line(cause if cause is not None else e)
            raise UsageError(f"{self.where}: a task on node {getattr(e, 'ip', '?')} failed: {why}; nothing written") \
                from None
        except ray.exceptions.RayError as e:  # its worker or node died more than RETRIES times, the object was lost
            raise UsageError(f"{self.where}: {_line(e)} (after {RETRIES} retries); nothing written") from None


def _line(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0][:300]}" if lines else type(e).__name__
