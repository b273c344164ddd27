"""The row writer: its background thread writes exactly the file an inline pyarrow write gives, hashes what it
wrote, and hands its errors to the caller without hanging."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.random_rows import WIDTH, make_rows
from sftpack.rows.hashing import rows_sha256_of
from sftpack.rows.model import Pieces, Row
from sftpack.rows.parquet import FORMAT_VERSION, SCHEMA, row_prompt
from sftpack.rows.parquet_writer import ROWS_PER_GROUP, WRITER_OPTIONS, RowWriter

def inline_file(path, rows: list[Row], name: str) -> None:
    """The file written the plain way: one bytes object per value, row groups of 64, the same writer options."""
    schema = SCHEMA.with_metadata({"sftpack.format": FORMAT_VERSION, "sftpack.row_tokens": str(WIDTH), "sftpack.build": name})
    with pq.ParquetWriter(str(path), schema, **WRITER_OPTIONS) as writer:
        for first in range(0, len(rows), ROWS_PER_GROUP):
            group = rows[first : first + ROWS_PER_GROUP]
            columns = {
                "tokens": pa.array([r.tokens.astype("<i4").tobytes() for r in group], pa.binary()),
                "loss_mask": pa.array([r.loss_mask.tobytes() for r in group], pa.binary()),
                "messages": pa.array([row_prompt(first + i) for i in range(len(group))], SCHEMA.field("messages").type),
                "metadata": pa.array([{"row": first + i, "build": name} for i in range(len(group))],
                                     SCHEMA.field("metadata").type),
                "supervised_tokens": pa.array([int(r.loss_mask.sum()) for r in group], pa.int32()),
                "conversation_ids": pa.array([[p.conversation for p in r.pieces] for r in group]),
                "conversation_starts": pa.array([[p.start for p in r.pieces] for r in group], pa.list_(pa.int32())),
                "conversation_lengths": pa.array([[p.length for p in r.pieces] for r in group], pa.list_(pa.int32())),
                "conversation_offsets": pa.array([[p.offset for p in r.pieces] for r in group], pa.list_(pa.int32())),
            }
            writer.write_table(pa.table(columns, schema=schema), row_group_size=ROWS_PER_GROUP)


def as_arrays(row: Row) -> Row:
    """The row with its pieces as the packer makes them (:class:`Pieces`: arrays, not Piece objects)."""
    return Row(row.tokens, row.loss_mask, Pieces([p.conversation for p in row.pieces], np.array([p.start for p in row.pieces]),
                                                 np.array([p.length for p in row.pieces]), np.array([p.offset for p in row.pieces])))


@pytest.mark.parametrize("pieces", ["objects", "arrays", "mixed"])
@pytest.mark.parametrize("n", [1, 64, 64 * 6 + 5])
def test_background_writer_writes_the_inline_file(tmp_path, n, pieces):
    rows = make_rows(n)  # the inline file is written from these, Piece objects
    given = {"objects": rows, "arrays": [as_arrays(r) for r in rows],
             "mixed": [as_arrays(r) if k % 2 else r for k, r in enumerate(rows)]}[pieces]
    interval = sys.getswitchinterval()
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    for row in given:
        writer.write(row)
    sha, size = writer.close()
    inline_file(tmp_path / "b.parquet", rows, "b")
    data = (tmp_path / "a.parquet").read_bytes()
    assert data == (tmp_path / "b.parquet").read_bytes()
    assert (sha, size) == (hashlib.sha256(data).hexdigest(), len(data))
    assert writer.rows_sha256 == rows_sha256_of(np.stack([r.tokens for r in rows]), np.stack([r.loss_mask for r in rows]))
    assert writer.supervised == sum(int(r.loss_mask.sum()) for r in rows)
    assert sys.getswitchinterval() == interval  # lowered while the thread ran, then restored


@pytest.mark.parametrize("count", [1, 7])
def test_any_number_of_compressors_writes_the_inline_file(tmp_path, monkeypatch, count):
    monkeypatch.setattr(RowWriter, "COMPRESSORS", count)
    rows = make_rows(64 * 9 + 3)  # more groups than the queue of one compressor holds, and a partial one
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    for row in rows:
        writer.write(row)
    assert writer._compressors._max_workers == count  # started with the first group, still there
    writer.close()
    inline_file(tmp_path / "b.parquet", rows, "b")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


@pytest.mark.skipif(not hasattr(os, "POSIX_FADV_DONTNEED"), reason="no posix_fadvise on this platform")
@pytest.mark.parametrize("advice", ["kept", "refused", "missing"])
def test_writeback_is_asked_for_each_stretch_of_the_file_once_and_changes_no_byte(tmp_path, monkeypatch, advice):
    """The writer hands what it has written to the kernel's writeback as it goes (so that the fsync at the end has
    little left to write): consecutive stretches of the file, once each, all of them already in the file; a file
    system that refuses the advice, or a platform without it, gets the same file."""
    import sftpack.rows.durable as durable

    calls = []

    def fadvise(fd, offset, length, how):
        calls.append((offset, length, os.fstat(fd).st_size, how))
        if advice == "refused":
            raise OSError(errno.ESPIPE, "Illegal seek")

    monkeypatch.setattr(durable, "WRITEBACK_BYTES", 20_000)
    if advice == "missing":
        monkeypatch.delattr(os, "posix_fadvise", raising=False)
    else:
        monkeypatch.setattr(os, "posix_fadvise", fadvise)
    rows = make_rows(64 * 6 + 5)
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    for row in rows:
        writer.write(row)
    writer.close()
    inline_file(tmp_path / "b.parquet", rows, "b")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    if advice == "missing":
        assert calls == []
        return
    assert len(calls) >= 3 and calls[0][0] == 0
    for (offset, length, size, how), following in zip(calls, calls[1:] + [None]):
        assert how == os.POSIX_FADV_DONTNEED and length >= 20_000 and offset + length <= size
        if following is not None:
            assert following[0] == offset + length


def test_no_rows_is_the_empty_file(tmp_path):
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    sha, size = writer.close()
    inline_file(tmp_path / "b.parquet", [], "b")
    data = (tmp_path / "a.parquet").read_bytes()
    assert data == (tmp_path / "b.parquet").read_bytes() and (sha, size) == (hashlib.sha256(data).hexdigest(), len(data))
    assert writer.rows_sha256 == hashlib.sha256().hexdigest()


def test_a_failing_write_reaches_the_caller_without_hanging(tmp_path, monkeypatch):
    def full_disk(self, *group):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RowWriter, "_write_group", full_disk)
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    with pytest.raises(OSError, match="No space left"):
        for row in make_rows(ROWS_PER_GROUP * (RowWriter.QUEUED_GROUPS + 4)):  # more groups than the queue holds
            writer.write(row)
        writer.close()
    writer.abort()
    assert writer._thread is None


def test_abort_stops_the_thread_and_restores_the_interval(tmp_path):
    interval = sys.getswitchinterval()
    writer = RowWriter(tmp_path / "a.parquet", WIDTH, "b")
    for row in make_rows(ROWS_PER_GROUP * 2):
        writer.write(row)
    assert writer._thread is not None and writer._thread.is_alive()
    thread = writer._thread
    writer.abort()
    assert not thread.is_alive() and sys.getswitchinterval() == interval


def test_footer_thrift_round_trip_and_stitching_of_other_files(tmp_path):
    from synthetic import PARQUET_OPTIONS  # tools/synthetic/ (the tests put tools/ on the path)

    from sftpack.sources import SAMPLE_PATH
    from sftpack.rows.parts import Stitcher, footer_of, part
    from sftpack.rows.thrift_compact import Reader, encode_struct, parse_struct

    # the bundled sample: another writer's options, with statistics (binary min/max) in its footer
    data = SAMPLE_PATH.read_bytes()
    footer = footer_of(data)
    assert encode_struct(parse_struct(Reader(footer))) == bytes(footer)
    table = pq.read_table(SAMPLE_PATH)
    schema = pq.read_schema(SAMPLE_PATH)
    options = {k: v for k, v in PARQUET_OPTIONS.items() if k != "write_batch_size"}
    with open(tmp_path / "s.parquet", "wb") as f:
        stitcher = Stitcher(f, schema, options)
        for first, n in ((0, 200), (200, 400), (600, 100)):  # uneven parts
            stitcher.add(part(table.slice(first, n), schema, options))
        stitcher.close()
    with pq.ParquetWriter(str(tmp_path / "o.parquet"), schema, **options) as writer:
        for first, n in ((0, 200), (200, 400), (600, 100)):
            writer.write_table(table.slice(first, n), row_group_size=n)
    assert (tmp_path / "s.parquet").read_bytes() == (tmp_path / "o.parquet").read_bytes()
    assert pq.read_table(tmp_path / "s.parquet").equals(table.slice(0, 700))
    with pytest.raises(ValueError, match="page indexes"):
        Stitcher(open(tmp_path / "x.parquet", "wb"), schema, options).add(
            part(table.slice(0, 10), schema, {**options, "write_page_index": True}))


@pytest.mark.parametrize("other_thread", [False, True])
def test_a_signal_while_the_writer_starts_its_threads_is_raised_once_they_run(tmp_path, monkeypatch, other_thread):
    """SIGINT arriving inside Thread.start() (a build's handler raises): the writer's threads start whole, the
    interruption reaches the caller after that, and abort then stops them cleanly. Also when another thread, one
    that does not block the signal, takes it: Python then runs the handler on the main thread all the same."""
    def handler(signum, frame):
        raise KeyboardInterrupt

    if other_thread:
        release = threading.Event()
        bystander = threading.Thread(target=release.wait, daemon=True)
        bystander.start()

    original = threading.Thread.start
    starts = []

    def start(self):  # the signal lands while the thread starts
        starts.append(self.name)
        if other_thread:  # taken by the other thread, whose handler call reaches the main thread at once
            signal.pthread_kill(bystander.ident, signal.SIGINT)
            time.sleep(0.05)
        else:
            os.kill(os.getpid(), signal.SIGINT)
        original(self)

    previous = signal.signal(signal.SIGINT, handler)
    writer = RowWriter(tmp_path / "x.parquet", WIDTH, "t")
    try:
        monkeypatch.setattr(threading.Thread, "start", start)
        with pytest.raises(KeyboardInterrupt):
            for row in make_rows(ROWS_PER_GROUP):
                writer.write(row)
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGINT, previous)
        if other_thread:
            release.set()
            bystander.join()
    assert starts and all(name.startswith("sftpack-") for name in starts)
    thread = writer._thread
    assert thread.is_alive()
    writer.abort()  # joins the writer's thread and the compressors'
    assert not thread.is_alive() and writer._thread is None
