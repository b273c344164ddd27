"""Faults: a real ``python -m sftpack build`` killed at different moments (SIGINT, SIGTERM, SIGKILL)
leaves neither final name (SPEC rule 9); SIGINT/SIGTERM also leave no temporaries, exit 130/143 and take their
worker processes along; a re-run gives the bytes of an uninterrupted build; two builds into one ``--out`` cannot
interleave. The build is frozen (SIGSTOP) at the chosen moment and the signal delivered there, so the tests do
not depend on the machine's speed."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1-local"  # built from a file of the test's
ROWS = 400
FINAL = (f"{NAME}-rows{ROWS}.parquet", f"{NAME}-rows{ROWS}.build.yaml")  # the file names state the row count


@pytest.fixture(scope="module")
def big_source(tmp_path_factory) -> Path:
    """~2,400 conversations of a few hundred to a few thousand tokens (~1,800 make the 400 rows): the build takes a
    few seconds, most of it starting up (imports, tokenizer); encoding and writing take about a second."""
    rng = random.Random(7)
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
             "upsilon phi chi psi omega 你好 世界 ünïcödé 😀 123 4567 , . ! ?").split()
    path = tmp_path_factory.mktemp("faults") / "big.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(2400):
            messages = []
            for _ in range(rng.randint(1, 3)):
                messages.append({"role": "user", "content": " ".join(rng.choices(words, k=rng.randint(20, 400)))})
                messages.append({"role": "assistant", "content": " ".join(rng.choices(words, k=rng.randint(20, 800)))})
            f.write(json.dumps({"id": f"big-{i}", "messages": messages, "source": "faults"}, ensure_ascii=False) + "\n")
    return path


def command(source: Path, out: Path, *extra: str, workers: int = 2) -> list[str]:
    return [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", str(source), "--rows", str(ROWS),
            "--row-tokens", "8192", "--out", str(out), "--workers", str(workers), *extra]


ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_build_left_running():
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:  # a failed test: stop the build we started (its own session), workers included
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Build:
    """A build subprocess whose stderr (progress bar included) is collected by a thread."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        _STARTED.append(self.proc)
        self.err = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while chunk := self.proc.stderr.read1(65536):
            with self._lock:
                self.err += chunk

    def rows_done(self) -> int:
        with self._lock:
            counts = re.findall(rb"(\d+)/%d " % ROWS, self.err)
        return int(counts[-1]) if counts else 0

    def wait_for_rows(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.rows_done() < n:
            assert self.proc.poll() is None, f"the build ended before {n} rows: {self.err.decode()[-2000:]}"
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.005)

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own session only
            self.proc.wait()
            pytest.fail("the build did not end")
        self._reader.join(timeout=5)
        if not self._reader.is_alive():  # else a lingering worker still holds the pipe: closing it would block
            self.proc.stdout.close()
            self.proc.stderr.close()
        with self._lock:
            return self.proc.returncode, self.err.decode("utf-8", "replace")


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid``, from /proc (no psutil)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def state(pid: int) -> str | None:
    """'R', 'S', ... for a live process, 'Z' for a zombie, None when gone."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return None


def wait_gone(pids: list[int], allow_zombies: bool, timeout: float = 10.0) -> dict[int, str | None]:
    deadline = time.monotonic() + timeout
    while True:
        states = {pid: state(pid) for pid in pids}
        alive = {p: s for p, s in states.items() if s is not None and not (allow_zombies and s in ("Z", "X"))}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reference(big_source, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("reference")
    build = Build(command(big_source, out, "--no-progress"))
    rc, err = build.finish()
    assert rc == 0, err
    return {name: (out / name).read_bytes() for name in FINAL}


def assert_same_as_reference(out: Path, reference: dict[str, bytes]) -> None:
    for name in FINAL:
        assert (out / name).read_bytes() == reference[name], name


MOMENTS = {
    "startup": lambda build: time.sleep(0.2),  # while Python imports and loads the tokenizer
    "first-row": lambda build: build.wait_for_rows(1),  # workers running, rows being written
    "late": lambda build: build.wait_for_rows(ROWS * 3 // 4),  # encoding may be over: writing, committing
}


@pytest.mark.parametrize("sig,moment", [
    (signal.SIGINT, "first-row"),
    (signal.SIGINT, "late"),
    (signal.SIGTERM, "startup"),
    (signal.SIGTERM, "first-row"),
    (signal.SIGKILL, "first-row"),
    (signal.SIGKILL, "late"),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_killed_build_leaves_no_output_and_reruns_identically(sig, moment, big_source, reference, tmp_path):
    out = tmp_path / "out"
    build = Build(command(big_source, out))
    MOMENTS[moment](build)
    # Freeze the build (workers included) at this moment, so that a slow machine cannot let it finish first; the
    # signal is then delivered exactly where it stopped.
    os.killpg(build.proc.pid, signal.SIGSTOP)
    assert build.proc.poll() is None, "the build finished before it could be interrupted"
    workers = children(build.proc.pid)
    if moment == "first-row":
        assert len(workers) >= 2, workers
    build.proc.send_signal(sig)
    os.killpg(build.proc.pid, signal.SIGCONT)
    try:
        check_interrupted(build, sig, workers, out)
    finally:
        for pid in workers:  # never leave a process of ours behind, even when the test fails
            if state(pid) not in (None, "Z", "X"):
                os.kill(pid, signal.SIGKILL)
    # the re-run (same command) cleans up whatever was left and writes the uninterrupted build's bytes
    rerun = Build(command(big_source, out, "--no-progress"))
    rc, err = rerun.finish()
    assert rc == 0, err
    assert_same_as_reference(out, reference)
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def check_interrupted(build: Build, sig: signal.Signals, workers: list[int], out: Path) -> None:
    rc, err = build.finish()
    assert rc != 0
    names = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert not set(FINAL) & set(names), names
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL
        # workers die with their parent (this container's init does not reap orphans: zombies are dead)
        assert wait_gone(workers, allow_zombies=True) == {}
    else:
        assert rc in (128 + sig, -sig), (rc, err)  # 130 SIGINT, 143 SIGTERM (or killed before the handlers)
        assert "Traceback" not in err, err
        assert not [n for n in names if n.endswith(".tmp")], names
        assert wait_gone(workers, allow_zombies=False) == {}  # reaped by the parent before it exited
        if rc > 0:
            assert "interrupted (a build writes its outputs only when it completes)" in err


def test_two_builds_into_one_out_cannot_interleave(big_source, reference, tmp_path):
    out = tmp_path / "out"
    first = Build(command(big_source, out))
    first.wait_for_rows(1)
    os.killpg(first.proc.pid, signal.SIGSTOP)  # hold it mid-build (lock taken, rows being written)
    assert first.proc.poll() is None
    for extra in ((), ("--overwrite",)):
        second = subprocess.run(command(big_source, out, "--no-progress", *extra), cwd=REPO, env=ENV,
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stderr
        assert "Traceback" not in second.stderr
        lines = [l for l in second.stderr.splitlines() if not l.startswith("sftpack: warning:")]
        assert len(lines) == 1 and "another sftpack build is writing" in lines[0], second.stderr
        assert second.stdout == ""
    assert first.proc.poll() is None
    os.killpg(first.proc.pid, signal.SIGCONT)
    rc, err = first.finish()
    assert rc == 0, err
    assert_same_as_reference(out, reference)
