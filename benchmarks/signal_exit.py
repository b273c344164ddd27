"""How long an interrupted ``sftpack build`` takes to exit (at most 2 s, every time), and whether it told
the truth, over many real signals at seeded random moments of the whole build.

Each run is ``python -m sftpack build --model Qwen3.5-122B-A10B --source sample --rows R`` in its own session;
after a delay drawn uniformly from [0, 1.1 x the build's own duration] (measured first, same machine) it gets
SIGINT or SIGTERM, sent to the whole group (Ctrl-C, ``timeout``) or to the parent only. Measured: seconds from
the signal to the parent's exit, and the outcome: ``interrupted`` (exit 128 + signal, no final file, no
temporary) or ``complete`` (exit 0, the reference rows_sha256: the signal came after the final renames), and
that no process of the session is left. Anything else is counted as ``WRONG`` and printed. A signal that lands in
the interpreter's own start-up, before sftpack's code runs (site.py and the .pth files: the first ~50 ms), meets
Python's defaults (SIGTERM kills, SIGINT prints a KeyboardInterrupt from site.py and exits 1); those runs are
counted apart, and only checked to have written nothing.

The baseline, measured in the same run, is a bare Python process that exits from its signal handler: the
machine's own floor for "signal sent -> process gone". Ratios are against its median.

    python benchmarks/signal_exit.py --runs 40            # 40 runs per (workers, signal, target)
    python benchmarks/signal_exit.py --runs 5 --workers 1 2 8
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
from processes import catches, session_members  # noqa: E402  (tools/processes.py)

MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"
FINAL = {f"{NAME}.parquet", f"{NAME}.build.yaml"}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
LIMIT = 2.0  # the bound sftpack promises, seconds
HANG = 30.0

BARE = ("import signal, sys, time\n"
        "signal.signal(signal.SIGINT, lambda s, f: sys.exit(130))\n"
        "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")


def handles_signals(pid: int) -> bool:
    """Whether sftpack's handlers are installed (SIGTERM caught): before that the signal meets Python's own
    start-up (site, .pth files), which no code of sftpack's can handle."""
    return catches(pid, signal.SIGTERM) is not False


def build(out: Path, rows: int, workers: int, log: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "sftpack", "build", "--model", MODEL, "--source", "sample", "--rows", str(rows),
            "--workers", str(workers), "--out", str(out), "--no-progress"]
    with open(log, "wb") as err:
        return subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=err, stderr=subprocess.STDOUT, start_new_session=True)


def wait(proc: subprocess.Popen) -> float:
    start = time.monotonic()
    try:
        proc.wait(timeout=HANG)
    except subprocess.TimeoutExpired:
        for pid in session_members(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.wait()
        return float("inf")
    return time.monotonic() - start


def baseline(runs: int) -> list[float]:
    took = []
    for k in range(runs):
        proc = subprocess.Popen([sys.executable, "-c", BARE], stdout=subprocess.PIPE)
        proc.stdout.readline()
        proc.send_signal(signal.SIGTERM if k % 2 else signal.SIGINT)
        took.append(wait(proc))
    return took


def reference(tmp: Path, rows: int, workers: int) -> tuple[str, float]:
    out = tmp / f"reference-{workers}"
    start = time.monotonic()
    proc = build(out, rows, workers, tmp / "reference.log")
    if proc.wait() != 0:
        sys.exit(f"the reference build failed: {(tmp / 'reference.log').read_text()[-2000:]}")
    took = time.monotonic() - start
    return yaml.safe_load((out / f"{NAME}.build.yaml").read_text())["rows_sha256"], took


def one(tmp: Path, k: int, rows: int, workers: int, sig: int, target: str, delay: float, sha: str) -> tuple[str, float, str]:
    out, log = tmp / f"run{k}", tmp / f"run{k}.log"
    proc = build(out, rows, workers, log)
    time.sleep(delay)
    if proc.poll() is not None:
        return "finished before the signal", 0.0, ""
    early = not handles_signals(proc.pid)
    (os.killpg if target == "group" else os.kill)(proc.pid, sig)
    took = wait(proc)
    text = log.read_text(errors="replace")
    names = set(os.listdir(out)) if out.exists() else set()
    deadline = time.monotonic() + 2
    while session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = session_members(proc.pid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    problems = []
    if "Traceback" in text or "Exception ignored" in text:
        problems.append("traceback")
    if any(n.endswith(".tmp") for n in names):
        problems.append("temporaries left")
    if left:
        problems.append(f"{len(left)} processes left")
    if early:  # Python's default: SIGTERM kills, SIGINT is a KeyboardInterrupt in site.py (exit 1); nothing written
        outcome = f"before sftpack's handlers (exit {proc.returncode})"
        problems = [p for p in problems if p != "traceback"]
        if names - {f".{NAME}.lock"}:
            problems.append(f"files written: {sorted(names)}")
    elif proc.returncode == 0:
        outcome = "complete"
        if not FINAL <= names or yaml.safe_load((out / f"{NAME}.build.yaml").read_text())["rows_sha256"] != sha:
            problems.append("exit 0 without the reference outputs")
        if "interrupted" in text:
            problems.append("exit 0 but says interrupted")
    else:
        outcome = "interrupted"
        if proc.returncode != 128 + sig:
            problems.append(f"exit {proc.returncode}")
        if FINAL & names:
            problems.append("final files with a failing exit")
    if problems:
        return "WRONG", took, f"delay {delay:.2f}s: {', '.join(problems)}: {text[-400:]!r}"
    return outcome, took, ""


def summary(label: str, took: list[float], base: float) -> str:
    if not took:
        return f"{label:<44} (no run was signalled)"
    q = np.quantile(took, [0.5, 0.95])
    under = sum(t < LIMIT for t in took)
    return (f"{label:<44} {len(took):>4} {q[0]:>7.3f} {q[1]:>7.3f} {max(took):>7.3f} {q[0] / base:>8.1f} "
            f"{max(took) / base:>8.1f}   {under}/{len(took)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="signalled runs per (workers, signal, target)")
    parser.add_argument("--rows", type=int, default=64, help="rows per build (sample source)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=0, help="seeds the delays")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"# python benchmarks/signal_exit.py --runs {args.runs} --rows {args.rows} --workers "
          f"{' '.join(map(str, args.workers))}  ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    base = baseline(max(10, args.runs))
    base_median = statistics.median(base)
    print(f"baseline: bare Python exiting from its signal handler: median {base_median:.3f} s, max {max(base):.3f} s")
    header = f"{'':<44} {'runs':>4} {'median':>7} {'p95':>7} {'max':>7} {'med/base':>8} {'max/base':>8}   under {LIMIT:.0f} s"
    wrong, lines, everything = [], [header], []
    with tempfile.TemporaryDirectory(prefix="sftpack-signals-") as tmp:
        tmp = Path(tmp)
        k = 0
        for workers in args.workers:
            sha, duration = reference(tmp, args.rows, workers)
            print(f"workers={workers}: a whole build takes {duration:.2f} s (rows_sha256 {sha[:16]}…)")
            for sig in (signal.SIGINT, signal.SIGTERM):
                for target in ("group", "parent"):
                    took, outcomes = [], {}
                    for _ in range(args.runs):
                        delay = float(rng.uniform(0, 1.1 * duration))
                        outcome, t, why = one(tmp, k, args.rows, workers, sig, target, delay, sha)
                        k += 1
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1
                        if outcome == "WRONG":
                            wrong.append(f"workers={workers} {sig.name} to the {target}: {why}")
                        if outcome in ("interrupted", "complete", "WRONG"):
                            took.append(t)  # (runs signalled during Python's start-up are counted apart)
                    everything += took
                    label = f"workers={workers} {signal.Signals(sig).name} to the {target}"
                    lines.append(summary(label, took, base_median) + "   " +
                                 ", ".join(f"{n} {c}" for n, c in sorted(outcomes.items())))
    lines.append(summary("all", everything, base_median))
    print("\nseconds from the signal to the exit")
    print("\n".join(lines))
    print(f"wrong outcomes: {len(wrong)}")
    for w in wrong:
        print("  " + w)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
