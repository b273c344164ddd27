"""The durable file under every rows writer: stretches of the file handed to the kernel's writeback once each as
they are written, a platform or file system without the advice changing nothing, the file made durable and its
sha256 taken at the end, and released once whatever failed, in every rows format."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest

import sftpack.rows.durable as durable
from sftpack.rows.durable import DurableFile
from sftpack.rows.formats import new_row_writer
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
    monkeypatch.setattr(durable, "WRITEBACK_BYTES", 100)
    return fadvise


@needs_fadvise
@pytest.mark.parametrize("refuse", [False, True])
def test_each_stretch_is_advised_once_with_its_bytes_already_in_the_file(tmp_path, advice, refuse):
    advice.refuse = refuse
    f = DurableFile(tmp_path / "f")
    f.write(b"x" * 50)
    f.advance()  # below the stretch: nothing
    assert advice.calls == []
    f.write(b"x" * 70)
    f.advance()  # 120 bytes: flushed from Python's buffer, then advised (the size seen then is the file's)
    f.write(b"y" * 30)
    f.advance()
    f.write(b"y" * 80)
    f.advance()
    assert f.finish() == (hashlib.sha256(b"x" * 120 + b"y" * 110).hexdigest(), 230)
    assert advice.calls == [(0, 120, 120, os.POSIX_FADV_DONTNEED), (120, 110, 230, os.POSIX_FADV_DONTNEED)]


@needs_fadvise
def test_a_file_written_elsewhere_is_followed_and_hashed_back(tmp_path, advice):
    path = tmp_path / "f"
    with open(path, "wb") as writer:  # as pyarrow's ParquetWriter writes its file
        f = DurableFile(path, written_elsewhere=True)
        writer.write(b"a" * 150)
        writer.flush()
        f.advance()
        writer.write(b"b" * 10)
    assert f.finish() == (hashlib.sha256(b"a" * 150 + b"b" * 10).hexdigest(), 160)
    assert advice.calls == [(0, 150, 150, os.POSIX_FADV_DONTNEED)]


def test_a_platform_without_the_advice_only_counts(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    monkeypatch.setattr(durable, "WRITEBACK_BYTES", 100)
    f = DurableFile(tmp_path / "f")
    f.write(b"z" * 300)
    f.advance()
    assert f.done == 300
    assert f.finish()[1] == 300 and (tmp_path / "f").read_bytes() == b"z" * 300


def test_finish_flushes_then_fsyncs_the_file(tmp_path, monkeypatch):
    events = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.fstat(fd).st_size)), real_fsync(fd)))
    f = DurableFile(tmp_path / "f")
    f.write(b"z" * 10)  # still in Python's buffer
    f.finish()
    assert events == [("fsync", 10)]


@needs_proc
@pytest.mark.parametrize("written_elsewhere", [False, True])
def test_a_failed_finish_releases_the_file_and_abort_after_it_does_nothing(tmp_path, monkeypatch, written_elsewhere):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / "f").touch()
    before = _open_descriptors()
    f = DurableFile(tmp_path / "f", written_elsewhere=written_elsewhere)
    assert _open_descriptors() == before + 1
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        f.finish()
    assert _open_descriptors() == before
    f.abort()
    f.abort()
    assert _open_descriptors() == before


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

    monkeypatch.setattr(DurableFile, "sync", full)
    before = _open_descriptors()
    writer = new_row_writer(format_name, tmp_path / "a.parquet", WIDTH, "b")
    for row in rows_every_format_holds(70):
        writer.write(row)
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    writer.abort()  # as the build does after a failed close: no second close of the descriptor
    assert _open_descriptors() == before
