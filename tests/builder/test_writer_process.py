"""The rows writer in a process of its own (sftpack.builder.writer_process): the same bytes as the writer in the
build's process for every rows format, its errors raised by the build as they are, its death one line, and no
process at all for a build of less than one batch."""

from __future__ import annotations

import errno
import multiprocessing
import os
import signal

import pytest

from helpers.outputs import built as built_file
from sftpack import BuildConfig, build
from sftpack.base.errors import UsageError
from sftpack.builder import writer_process
from sftpack.builder.writer_process import WriterProcess
from sftpack.rows.formats import ROW_FORMATS
from sftpack.rows.writer import RowSink
from sftpack.rows.parquet_writer import RowWriter

MODEL = "Qwen3.5-122B-A10B"
ROWS, ROW_TOKENS = 150, 128  # two full batches of 64 rows and 22 rows at close


def _build(out, fmt: str = "parquet", rows: int = ROWS, workers: int = 1):
    return build(BuildConfig(model=MODEL, source="sample", rows=rows, row_tokens=ROW_TOKENS, out=str(out),
                             workers=workers, progress=False, format=fmt))


@pytest.fixture(autouse=True)
def writer_process_always(monkeypatch):
    """Every build here that fills a batch writes in a process of its own (by default only large ones do)."""
    monkeypatch.setenv("SFTPACK_WRITER_PROCESS", "1")


@pytest.fixture
def started(monkeypatch) -> list:
    """Whether each build's writer went to a process of its own (one entry per build that filled a batch)."""
    calls = []
    real = WriterProcess._start

    def spy(self):
        real(self)
        calls.append(self._process is not None)

    monkeypatch.setattr(WriterProcess, "_start", spy)
    return calls


def _outputs(out) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.mark.parametrize("fmt", sorted(ROW_FORMATS))
def test_the_writer_process_writes_the_bytes_the_build_process_writes(fmt, tmp_path, monkeypatch, started):
    monkeypatch.setenv("SFTPACK_WRITER_PROCESS", "0")
    _build(tmp_path / "here", fmt)
    monkeypatch.setenv("SFTPACK_WRITER_PROCESS", "1")
    record = _build(tmp_path / "process", fmt, workers=2)
    assert started == [False, True]
    assert _outputs(tmp_path / "process") == _outputs(tmp_path / "here")
    assert record.rows == ROWS
    assert not multiprocessing.active_children()  # the writer process (and the workers) reaped


def test_one_slot_makes_the_build_wait_for_each_batch_and_changes_nothing(tmp_path, monkeypatch, started):
    monkeypatch.setattr(writer_process, "SLOTS", 1)
    _build(tmp_path / "one")
    monkeypatch.setattr(writer_process, "SLOTS", 8)
    _build(tmp_path / "eight")
    assert started == [True, True]
    assert _outputs(tmp_path / "one") == _outputs(tmp_path / "eight")


def test_less_than_a_batch_is_written_without_a_process(tmp_path, started):
    record = _build(tmp_path, rows=20)
    assert started == [] and record.rows == 20
    assert built_file(tmp_path, ".parquet").exists()


@pytest.mark.parametrize("setting, workers, rows, expected", [
    ("", 2, ROWS, False), ("", 1, None, False), ("", 2, writer_process.PROCESS_ROWS, True), ("", 2, None, True),
    ("0", 16, None, False), ("1", 1, ROWS, True)])
def test_the_writer_goes_to_a_process_of_its_own_for_large_builds_with_workers(monkeypatch, setting, workers, rows,
                                                                               expected):
    monkeypatch.setenv("SFTPACK_WRITER_PROCESS", setting)
    assert writer_process.separate(rows, workers) is expected


def test_a_small_build_with_workers_keeps_its_writer(tmp_path, monkeypatch, started):
    monkeypatch.delenv("SFTPACK_WRITER_PROCESS")
    record = _build(tmp_path, workers=2)
    assert started == [False] and record.rows == ROWS


def test_a_full_disk_in_the_writer_process_is_the_builds_one_line(tmp_path, monkeypatch, started):
    def full_disk(self, compressed):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RowWriter, "_write_group", full_disk)  # inherited by the forked writer
    with pytest.raises(UsageError, match=r"^no space left on the device \(--out .*\); nothing written$"):
        _build(tmp_path)
    assert started == [True]
    assert list(tmp_path.iterdir()) == []  # the temporaries removed
    assert not multiprocessing.active_children()


def test_a_writer_process_killed_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, started):
    parent = os.getpid()

    def killed(self, row):
        if os.getpid() != parent:  # only in the writer process
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(RowSink, "write", killed)
    with pytest.raises(UsageError, match=r"^the rows writer process died \(killed by SIGKILL.*\); nothing written$"):
        _build(tmp_path)
    assert started == [True]
    assert list(tmp_path.iterdir()) == []
    assert not multiprocessing.active_children()


def test_the_closing_figures_are_taken_when_the_writer_process_has_already_exited(tmp_path, monkeypatch, started):
    """The writer process exits right after sending its figures; read only then, they are found before the pipe's end
    (which also reads as ready) is taken for a death."""
    real_close, real_replies = WriterProcess.close, WriterProcess._replies

    def close(self):
        self.closing = True
        return real_close(self)

    def replies(self, block):
        if block and getattr(self, "closing", False):
            self._process.join(timeout=60)  # it has sent its figures and exited
            assert self._process.exitcode == 0
        return real_replies(self, block)

    monkeypatch.setattr(WriterProcess, "close", close)
    monkeypatch.setattr(WriterProcess, "_replies", replies)
    record = _build(tmp_path / "late")
    monkeypatch.undo()
    _build(tmp_path / "usual")
    assert started == [True] and record.rows == ROWS
    assert _outputs(tmp_path / "late") == _outputs(tmp_path / "usual")


def test_a_signal_while_the_writer_process_starts_is_raised_once_it_runs(tmp_path, monkeypatch):
    """SIGINT arriving inside Process.start() (a build's handler raises): the process starts whole, the interruption
    reaches the build after that, and abort then kills it (before, abort met a process object without a process)."""
    import numpy as np

    from sftpack.rows.formats import new_row_writer
    from sftpack.rows.model import Row

    def handler(signum, frame):
        raise KeyboardInterrupt

    original = multiprocessing.process.BaseProcess.start

    def start(self):  # the signal lands while the process starts
        os.kill(os.getpid(), signal.SIGINT)
        original(self)

    writer = WriterProcess(lambda: new_row_writer("parquet", tmp_path / "x.parquet", ROW_TOKENS, "t"), ROW_TOKENS)
    rows = [Row(np.arange(ROW_TOKENS, dtype=np.int32), np.ones(ROW_TOKENS, dtype=np.uint8)) for _ in range(writer.batch)]
    previous = signal.signal(signal.SIGINT, handler)
    try:
        monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
        with pytest.raises(KeyboardInterrupt):
            for row in rows:
                writer.write(row)
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGINT, previous)
    process = writer._process
    assert process is not None and process.pid is not None
    writer.abort()
    assert process.exitcode is not None and writer._process is None
    assert not multiprocessing.active_children()


def test_a_signal_while_the_workers_stop_after_the_last_row_kills_the_writer_process(tmp_path, monkeypatch, started):
    """The last row handed to the writer process, a signal lands while the loop's ``finally`` stops the workers: the
    build stops, the writer process is killed before the temporaries are removed (else it could create its file
    after), and no process is left."""
    from sftpack.builder import interrupts, pipeline

    real = pipeline.encoded_chunks

    class Stream:  # the real stream, whose second close (the loop's `finally`) is where the signal lands
        def __init__(self, *args, **kwargs):
            self.inner, self.closes = real(*args, **kwargs), 0

        def __iter__(self):
            return self.inner

        def close(self):
            self.closes += 1
            self.inner.close()
            if self.closes == 2:
                raise interrupts.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(pipeline, "encoded_chunks", Stream)
    with pytest.raises(interrupts.Interrupted):
        _build(tmp_path, rows=64, workers=2)
    assert started == [True]  # the 64th row started the writer process
    assert multiprocessing.active_children() == []
    assert sorted(os.listdir(tmp_path)) == []
