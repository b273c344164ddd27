"""The worker pool: results in task order whatever order they arrive in, a task's exception raised at its turn, a
worker that dies named with its exit status, a pool left with tasks in flight closed without a hang, and results
of every size crossing the pipe whole (arrays larger than the pipe, empty ones, none); a chunk's result pickled
with its masks as bits and back."""

from __future__ import annotations

import os
import time

import pickle

import numpy as np
import pytest

from sftpack.builder.chunks import ChunkResult
from sftpack.builder.workers import PIPE_BYTES, WorkerDied, WorkerPool


def _double_slowly_for_small(x: int) -> int:
    time.sleep(0.02 if x % 3 == 0 else 0.0)  # later tasks often finish first
    return 2 * x


def _raise_at_3(x: int) -> int:
    if x == 3:
        raise ValueError("task three")
    return x


def _die_at_5(x: int) -> int:
    if x == 5:
        os._exit(3)
    return x


def test_results_come_in_task_order():
    with WorkerPool(3, _double_slowly_for_small) as pool:
        assert list(pool.imap(range(60), depth=9)) == [2 * x for x in range(60)]


def test_a_tasks_exception_is_raised_at_its_turn():
    got = []
    with WorkerPool(2, _raise_at_3) as pool:
        with pytest.raises(ValueError, match="task three"):
            for result in pool.imap(range(10), depth=4):
                got.append(result)
    assert got == [0, 1, 2]


def test_a_dead_worker_is_named_with_its_exit_status():
    got = []
    with WorkerPool(2, _die_at_5) as pool:
        with pytest.raises(WorkerDied, match=r"encoding worker \d died \(exit status 3\)"):
            for result in pool.imap(range(20), depth=4):
                got.append(result)
    assert got == list(range(len(got))) and len(got) <= 5  # in order, none from after the death


def test_a_pool_left_with_tasks_in_flight_closes_at_once():
    start = time.monotonic()
    with WorkerPool(2, _double_slowly_for_small) as pool:
        results = pool.imap(range(1000), depth=8)
        assert [next(results) for _ in range(3)] == [0, 2, 4]
    assert time.monotonic() - start < 5


def _arrays(x: int) -> dict:
    # deterministic from x: sizes from nothing to three pipes' worth, several dtypes, an empty array, nested in a dict
    rng = np.random.default_rng(x)
    size = [0, 1, 4095, PIPE_BYTES - 3, PIPE_BYTES + 5, 3 * PIPE_BYTES + 1][x % 6]
    return {"x": x, "bytes": rng.integers(0, 256, size, dtype=np.uint8), "ids": rng.integers(-2**31, 2**31, x % 7 * 1000, dtype=np.int32),
            "empty": np.zeros(0, np.int64), "text": "é" * x}


def _no_arrays(x: int) -> tuple:
    return (x, "plain", [x] * 3)


def test_results_of_every_size_cross_the_pipe_whole():
    with WorkerPool(3, _arrays) as pool:
        for x, got in zip(range(24), pool.imap(range(24), depth=9)):
            want = _arrays(x)
            assert got.keys() == want.keys() and got["x"] == x and got["text"] == want["text"]
            for key in ("bytes", "ids", "empty"):
                assert got[key].dtype == want[key].dtype and np.array_equal(got[key], want[key])
    with WorkerPool(2, _no_arrays) as pool:
        assert list(pool.imap(range(10), depth=4)) == [_no_arrays(x) for x in range(10)]


@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 1001])
def test_a_chunk_result_pickles_with_its_masks_as_bits(count):
    masks = (np.arange(count) % 3 == 1).astype(np.uint8)
    result = ChunkResult(["a"], [None], np.array([count]), np.arange(count, dtype=np.int32), masks)
    state = result.__getstate__()
    assert state["masks"][0].nbytes == (count + 7) // 8  # what crosses the pipe
    back = pickle.loads(pickle.dumps(result, protocol=5))
    assert back.masks.dtype == np.uint8 and back.masks.tolist() == masks.tolist()
    assert back.tokens.tolist() == list(range(count)) and back.ids == ["a"]
