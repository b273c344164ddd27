"""Real SIGINT / SIGTERM at many moments of a real ``python -m sftpack build``, to the whole process
group (Ctrl-C in a terminal, ``timeout``) or to the parent only, with one and two workers.

Every run must end within a few seconds of the signal and tell the truth: a signal before the final renames gives
exit 130 (SIGINT) / 143 (SIGTERM), "interrupted", no final file and no temporary; one after them a complete build
(exit 0, the reference rows). Never a traceback, never a process of the build left behind.

The moments are build events seen from outside (the SIGTERM handler installed, per /proc; the progress bar
created, k rows written, all rows written) plus an offset, so that the runs land in start-up, tokenizer loading,
worker start, encoding, writing and the commit whatever the machine's speed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
import yaml
from processes import catches, session_members  # tools/processes.py

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1-sample"  # built from the bundled sample
ROWS = 64
FINAL = {f"{NAME}-rows{ROWS}.parquet", f"{NAME}-rows{ROWS}.build.yaml"}  # the file names state the row count
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
# Seconds from the signal to the exit. The product promises 2 s, which benchmarks/signal_exit.py measures (no timed
# tests; benchmarks/results/signal_exit/: well under 1 s). On a shared 2-core machine a write's fsync
# or the CPU queue has stretched one to 2.1 s, so this bound is 6 s: it still catches any hang.
EXIT_LIMIT = 6.0
HANG = 30.0  # past this a run counts as hung and is killed


def command(out: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", "sample", "--rows", str(ROWS),
            "--workers", str(workers), "--out", str(out)]


class Run:
    """A build in its own session (so that every process it starts can be found, and killed if the test fails)."""

    def __init__(self, out: Path, workers: int):
        self.proc = subprocess.Popen(command(out, workers), cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.err = b""
        self.out = b""
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._read, args=(s, k), daemon=True)
                         for s, k in ((self.proc.stderr, "err"), (self.proc.stdout, "out"))]
        for t in self._threads:
            t.start()

    def _read(self, stream, key: str) -> None:
        while chunk := stream.read1(65536):
            with self._lock:
                setattr(self, key, getattr(self, key) + chunk)

    def rows_done(self) -> int | None:
        with self._lock:
            counts = re.findall(rb"(\d+)/%d " % ROWS, self.err)
        return int(counts[-1]) if counts else None

    def wait_until(self, ready, timeout: float = 120.0) -> bool:
        """Poll ``ready()``; False if the build ended first."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                return False
            assert time.monotonic() < deadline, "the build made no progress"
            time.sleep(0.002)
        return True

    def catches_sigterm(self) -> bool:
        return bool(catches(self.proc.pid, signal.SIGTERM))

    def finish(self) -> tuple[int, float]:
        """Exit code and seconds until the exit."""
        start = time.monotonic()
        try:
            self.proc.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.kill_session()
            pytest.fail(f"the build hung after the signal: {self.err.decode(errors='replace')[-1500:]}")
        took = time.monotonic() - start
        for t in self._threads:
            t.join(timeout=5)
        return self.proc.returncode, took

    def kill_session(self) -> None:
        for pid in session_members(self.proc.pid):
            os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def reference_rows_sha256(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("signals-reference")
    run = Run(out, workers=2)
    rc, _ = run.finish()
    assert rc == 0, run.err.decode()
    return yaml.safe_load((out / f"{NAME}-rows{ROWS}.build.yaml").read_text())["rows_sha256"]


# (event, offset in seconds): the event is seen in the build's stderr or /proc, the signal follows after the offset.
EVENTS = {
    "handlers": lambda run: run.catches_sigterm(),  # imports, tokenizer and source loading follow
    "bar": lambda run: run.rows_done() is not None,  # the progress bar exists: the workers are being started
    "rows": lambda run: (run.rows_done() or 0) >= 8,  # encoding and writing
    "end": lambda run: run.rows_done() == ROWS,  # all rows written: closing the parquet, the renames, exiting
}
MOMENTS = [("handlers", 0.0), ("handlers", 0.4), ("bar", 0.0), ("bar", 0.03), ("rows", 0.0), ("end", 0.05),
           ("end", 0.15), ("end", 0.3)]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("target", ["group", "parent"])
def test_real_signals_at_many_moments(workers, sig, target, reference_rows_sha256, tmp_path):
    combo = [1, 2].index(workers) * 4 + [signal.SIGINT, signal.SIGTERM].index(sig) * 2 + ["group", "parent"].index(target)
    # 3 of the 8 moments per combination; the 4 combinations of a worker count cover all 8: 24 runs in all
    moments = [MOMENTS[(combo + 3 * i) % len(MOMENTS)] for i in range(3)]
    outcomes = []
    for k, (event, offset) in enumerate(moments):
        out = tmp_path / f"out{k}"
        run = Run(out, workers)
        try:
            if run.wait_until(lambda: EVENTS[event](run)):
                time.sleep(offset)
            sent = run.proc.poll() is None
            if sent:
                if target == "group":
                    os.killpg(run.proc.pid, sig)
                else:
                    os.kill(run.proc.pid, sig)
            rc, took = run.finish()
            err = run.err.decode("utf-8", "replace")
            where = f"{event}+{offset}s: exit {rc} after {took:.2f}s; stderr: {err[-1500:]}"
            assert "Traceback" not in err and "Exception ignored" not in err, where
            names = set(os.listdir(out)) if out.exists() else set()
            assert not [n for n in names if n.endswith(".tmp")], (names, where)
            if rc == 0:  # the signal came after the final renames (or after the exit): a complete build
                assert FINAL <= names, (names, where)
                record = yaml.safe_load((out / f"{NAME}-rows{ROWS}.build.yaml").read_text())
                assert record["rows_sha256"] == reference_rows_sha256, where
                assert "built 64 rows" in run.out.decode(), where
                assert "interrupted" not in err, where
            else:
                assert sent, where
                assert rc == 128 + sig, where
                assert not FINAL & names, (names, where)
                assert "sftpack: interrupted" in err, where
                assert took < EXIT_LIMIT, where
            deadline = time.monotonic() + 2
            while session_members(run.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert session_members(run.proc.pid) == [], f"processes left behind: {where}"
            outcomes.append((event, offset, rc, round(took, 2)))
        finally:
            run.kill_session()
    print(f"workers={workers} {sig.name} to the {target}: {outcomes}")



# The two windows a timed signal rarely hits, made exact: a signal between the final renames, and one recorded in
# a deferred section (while the workers were being stopped) that is still pending when the renames are due.


RECORD = types.SimpleNamespace(to_yaml=lambda: "name: x\n")  # what commit writes as the build record


@pytest.fixture
def handlers():
    from sftpack.builder import interrupts

    previous = interrupts.install()
    yield interrupts
    interrupts.restore(previous)


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    from sftpack.builder import output as write

    files = write.OutputFiles(tmp_path / "out", "x")
    files.renamed = []
    real_replace = os.replace

    def replace(a, b):
        real_replace(a, b)
        files.renamed.append(Path(b).name)
        if files.renamed == ["x.parquet"] and getattr(files, "signal_between", None):
            os.kill(os.getpid(), files.signal_between)  # handled in this thread before the next bytecode

    monkeypatch.setattr(write.os, "replace", replace)
    return files


def test_signal_between_the_renames_leaves_a_complete_build(handlers, outputs):
    outputs.signal_between = signal.SIGTERM
    with outputs:
        outputs.tmp_parquet.write_bytes(b"rows")
        outputs.commit(RECORD)
    assert outputs.renamed == ["x.parquet", "x.build.yaml"]
    assert sorted(os.listdir(outputs.dir)) == ["x.build.yaml", "x.parquet"]  # (the lock file goes with the build)
    assert handlers.late_signal() == signal.SIGTERM  # reported as arriving after the outputs were in place


def test_signal_recorded_before_the_renames_interrupts_them(handlers, outputs):
    with pytest.raises(handlers.Interrupted) as raised:
        with outputs:
            outputs.tmp_parquet.write_bytes(b"rows")
            try:
                with handlers.deferred():
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.01)  # the handler has run: recorded, not raised
                    raise GeneratorExit  # left by an exception (a closed generator): nothing raised on the way out
            except GeneratorExit:
                pass
            outputs.commit(RECORD)
    assert raised.value.exit_code == 130
    assert outputs.renamed == []
    assert not outputs.dir.exists()  # the --out it created, removed with the temporaries
