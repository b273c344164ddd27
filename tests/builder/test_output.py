"""The outputs' commit: the record synced before the renames, and the directory holding the new names synced after
them, so that a machine that loses power after a build keeps both files or neither name."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sftpack.builder import output


class Record:
    def to_yaml(self) -> str:
        return "rows: 1\n"


def test_commit_syncs_the_record_then_the_directory_after_the_renames(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        info = os.fstat(fd)
        events.append(("fsync", "dir" if stat.S_ISDIR(info.st_mode) else "file", info.st_ino))
        real_fsync(fd)

    def replace(a, b):
        real_replace(a, b)
        events.append(("rename", Path(b).name))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    files = output.OutputFiles(tmp_path / "out", "x")
    with files:
        files.tmp_parquet.write_bytes(b"rows")
        files.commit(Record())
    record_inode, dir_inode = files.record.stat().st_ino, files.dir.stat().st_ino
    assert events == [("fsync", "file", record_inode), ("rename", "x.parquet"), ("rename", "x.build.yaml"),
                      ("fsync", "dir", dir_inode)]
    assert files.record.read_text() == "rows: 1\n" and files.parquet.read_bytes() == b"rows"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd to count descriptors")
def test_a_directory_that_cannot_be_synced_leaves_the_commit_as_it_is(tmp_path, monkeypatch):
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    before = len(os.listdir("/proc/self/fd"))
    files = output.OutputFiles(tmp_path / "out", "x")
    with files:
        files.tmp_parquet.write_bytes(b"rows")
        files.commit(None)
    assert files.parquet.read_bytes() == b"rows" and not files.record.exists()
    assert len(os.listdir("/proc/self/fd")) == before
