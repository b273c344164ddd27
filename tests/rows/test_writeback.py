"""The writeback of a rows file: stretches of the file handed to the kernel once each as they are written, a
platform or file system without the advice changing nothing, and the file made durable at the end, in every
rows format."""

from __future__ import annotations

import errno
import os

import pytest

import sftpack.rows.writeback as writeback
from sftpack.rows.formats import new_row_writer
from sftpack.rows.writeback import Writeback
from helpers.random_rows import WIDTH, make_rows

needs_fadvise = pytest.mark.skipif(not hasattr(os, "POSIX_FADV_DONTNEED"), reason="no posix_fadvise on this platform")
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd to count descriptors")


@pytest.fixture
def advice(monkeypatch):
    """The advice given, as (offset, length, file size then, how); ``advice.refuse`` makes it fail as a file system
    without it does."""
    calls = []

    def fadvise(fd, offset, length, how):
        calls.append((offset, length, os.fstat(fd).st_size, how))
        if fadvise.refuse:
            raise OSError(errno.ESPIPE, "Illegal seek")

    fadvise.refuse = False
    fadvise.calls = calls
    monkeypatch.setattr(os, "posix_fadvise", fadvise, raising=False)
    monkeypatch.setattr(writeback, "WRITEBACK_BYTES", 100)
    return fadvise


@needs_fadvise
@pytest.mark.parametrize("refuse", [False, True])
def test_each_stretch_is_advised_once_after_a_flush(tmp_path, advice, refuse):
    advice.refuse = refuse
    events = []
    with open(tmp_path / "f", "wb") as f:
        back = Writeback(f.fileno(), lambda: (events.append("flush"), f.flush()))
        f.write(b"x" * 120)
        back.advance(50)  # below the stretch: nothing
        assert advice.calls == [] and events == []
        back.advance(120)
        f.write(b"y" * 110)
        back.advance(150)
        back.advance(230)
    assert events == ["flush", "flush"]
    assert advice.calls == [(0, 120, 120, os.POSIX_FADV_DONTNEED), (120, 110, 230, os.POSIX_FADV_DONTNEED)]
    assert back.done == 230


def test_a_platform_without_the_advice_only_counts(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    monkeypatch.setattr(writeback, "WRITEBACK_BYTES", 100)
    with open(tmp_path / "f", "wb") as f:
        back = Writeback(f.fileno())
        back.advance(300)
    assert back.done == 300


def test_sync_flushes_then_fsyncs_the_file(tmp_path, monkeypatch):
    events = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.fstat(fd).st_size)), real_fsync(fd)))
    with open(tmp_path / "f", "wb") as f:
        f.write(b"z" * 10)  # still in Python's buffer
        Writeback(f.fileno(), lambda: (events.append("flush"), f.flush())).sync()
    assert events == ["flush", ("fsync", 10)]


def rows_every_format_holds(n: int):
    """Rows whose documents each start on a token that is not a target (as a build's do: an EOS or a prompt), which
    the Megatron-Bridge layout requires."""
    rows = make_rows(n)
    for row in rows:
        for piece in row.pieces:
            row.loss_mask[piece.start] = 0
    return rows


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@needs_fadvise
@needs_proc
@pytest.mark.parametrize("format_name", ["parquet", "trl", "megatron-bridge"])
def test_every_rows_format_advises_its_stretches_and_syncs_the_file(tmp_path, monkeypatch, advice, format_name):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd)), real_fsync(fd)))
    rows = rows_every_format_holds(64 * 5 + 3)
    before = _open_descriptors()
    writer = new_row_writer(format_name, tmp_path / "a.parquet", WIDTH, "b")
    for row in rows:
        writer.write(row)
    writer.close()
    assert _open_descriptors() == before  # the writer's own descriptors are closed
    path = tmp_path / "a.parquet"
    assert [(s.st_ino, s.st_size) for s in synced] == [(path.stat().st_ino, path.stat().st_size)]
    calls = advice.calls
    assert len(calls) >= 3 and calls[0][0] == 0
    for (offset, length, size, how), following in zip(calls, calls[1:] + [None]):
        assert how == os.POSIX_FADV_DONTNEED and length >= 100 and offset + length <= size
        if following is not None:
            assert following[0] == offset + length

    # the same bytes where the advice is missing
    monkeypatch.delattr(os, "posix_fadvise")
    plain = new_row_writer(format_name, tmp_path / "b.parquet", WIDTH, "b")
    for row in rows:
        plain.write(row)
    plain.close()
    assert path.read_bytes() == (tmp_path / "b.parquet").read_bytes()


@needs_proc
@pytest.mark.parametrize("format_name", ["trl", "megatron-bridge"])
def test_a_failed_close_then_the_builds_abort_raise_only_the_failure(tmp_path, monkeypatch, format_name):
    def full(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Writeback, "sync", full)
    before = _open_descriptors()
    writer = new_row_writer(format_name, tmp_path / "a.parquet", WIDTH, "b")
    for row in rows_every_format_holds(70):
        writer.write(row)
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    writer.abort()  # as the build does after a failed close: no second close of the descriptor
    assert _open_descriptors() == before
