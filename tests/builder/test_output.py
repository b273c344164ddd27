"""The outputs' commit: the record synced before the renames, and the directory holding the new names synced after
them, so that a machine that loses power after a build keeps both files or neither name; what a killed build left is
removed by the next build into the directory, whatever its name; a failed build leaves no --out it created."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sftpack.builder import output
from sftpack.builder.output import OutputFiles


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


def _killed_build(directory, name: str) -> None:
    """What a SIGKILLed build leaves: its lock (released by the kernel with the process) and its temporaries."""
    import signal
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import fcntl, os, sys, time
        lock = open({str(directory / f'.{name}.lock')!r}, "a")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"{{os.getpid()}}\\n"); lock.flush()
        open({str(directory / f'.{name}.parquet.tmp')!r}, "wb").write(b"x" * 1000)
        open({str(directory / f'.{name}.build.yaml.tmp')!r}, "w").write("x")
        print("ready", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


def test_a_later_build_of_any_name_removes_a_dead_builds_lock_and_temporaries(tmp_path):
    import fcntl

    _killed_build(tmp_path, "dead")
    live = open(tmp_path / ".live.lock", "a")  # a build still running: left alone
    fcntl.flock(live, fcntl.LOCK_EX | fcntl.LOCK_NB)
    (tmp_path / ".live.trl.parquet.tmp").write_bytes(b"y")
    (tmp_path / ".orphan.idx.parquet.tmp").write_bytes(b"z")  # no lock at all
    (tmp_path / ".notes.tmp").write_text("someone else's")  # not a build's temporary
    with OutputFiles(tmp_path, "other"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".live.lock", ".live.trl.parquet.tmp", ".notes.tmp"]
    live.close()


def test_a_failed_build_removes_the_out_it_created_and_only_that(tmp_path):
    out = tmp_path / "new" / "deeper"
    with pytest.raises(RuntimeError):
        with OutputFiles(out, "rows"):
            raise RuntimeError("the build failed")
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(RuntimeError):
        with OutputFiles(existing / "sub", "rows"):
            raise RuntimeError("the build failed")
    assert existing.is_dir() and not (existing / "sub").exists()
    (existing / "keep").write_text("x")
    with pytest.raises(RuntimeError):
        with OutputFiles(existing, "rows"):
            raise RuntimeError("the build failed")
    assert (existing / "keep").read_text() == "x"
