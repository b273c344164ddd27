"""A value computed in a forked process (sftpack.base.aside.Aside): its result is the function's, in another
process; a child that gives none leaves the function to run here, with its value or its error; a dropped one's child
is stopped; pickled, it is its result. A local source opened with ``hash_aside`` records its file's sha256."""

from __future__ import annotations

import hashlib
import os
import pickle
import time

import pytest

from sftpack.base.aside import Aside
from sftpack.sources import open_source

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")


def test_the_result_is_computed_in_another_process():
    parent = os.getpid()
    assert Aside(lambda: str(os.getpid())).result() != str(parent)


def test_a_child_that_fails_leaves_the_function_to_run_here(tmp_path):
    calls = tmp_path / "calls"

    def fn():
        with open(calls, "a") as f:
            f.write(f"{os.getpid()}\n")
        if os.getpid() != parent:
            os._exit(3)  # the child dies without a value
        return "here"

    parent = os.getpid()
    assert Aside(fn).result() == "here"
    pids = calls.read_text().split()
    assert len(pids) == 2 and pids[1] == str(parent) and pids[0] != str(parent)


def test_an_error_is_raised_here_as_without_the_child():
    def fn():
        raise FileNotFoundError("no such source")

    with pytest.raises(FileNotFoundError, match="no such source"):
        Aside(fn).result()


def test_a_dropped_one_stops_its_child():
    aside = Aside(lambda: (time.sleep(30), "late")[1])
    pid = aside._pid
    os.kill(pid, 0)  # running
    start = time.monotonic()
    del aside
    assert time.monotonic() - start < 5
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process left
        os.kill(pid, 0)


def test_pickled_it_is_its_result():
    assert pickle.loads(pickle.dumps(Aside(lambda: "abc"))) == "abc"


def test_a_large_source_opened_with_hash_aside_records_its_sha256(tmp_path, monkeypatch):
    import sftpack.sources

    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    small = open_source(str(path), hash_aside=True)
    assert small.info.__dict__["_sha256"] == expected  # hashed here: a fork would cost more than the hash
    monkeypatch.setattr(sftpack.sources, "ASIDE_FROM_BYTES", path.stat().st_size)
    source = open_source(str(path), hash_aside=True)
    assert isinstance(source.info.__dict__["_sha256"], Aside)  # not computed yet when opened
    assert source.info.sha256 == expected
    assert pickle.loads(pickle.dumps(source.info)).sha256 == expected
