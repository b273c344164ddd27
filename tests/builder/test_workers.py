"""The worker pool: results in task order whatever order they arrive in, a task's exception raised at its turn, a
worker that dies named with its exit status, and a pool left with tasks in flight closed without a hang."""

from __future__ import annotations

import os
import time

import pytest

from sftpack.builder.workers import WorkerDied, WorkerPool


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
