"""Where a build's threads wait: runs a command (a build) and samples the state of every thread of it and of its
child processes every few milliseconds from ``/proc`` (Linux), then prints per role (the parent's main thread, its
other threads by name, the workers' main threads, their other threads) the share of samples in each state, with
the kernel's wait channel for sleeping ones (``anon_pipe_read``: a worker waiting for its next task;
``futex_do_wait``: a thread waiting for the GIL or a lock; ``poll_schedule_timeout``: the parent waiting for
results), and from ``/proc/.../schedstat`` the seconds each role ran on a CPU and the seconds it was runnable but
waiting for one.

    python benchmarks/thread_states.py -- python -m sftpack build --model Qwen3.5-122B-A10B --source FILE \\
        --rows all --workers 16 --out OUT --overwrite --no-progress

Sampling costs CPU of its own (``--every``, default 10 ms); compare runs sampled alike. No ratio is printed: this
says where the time goes, the build benchmarks say how much there is of it.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import time


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:  # the thread ended between the listing and the read
        return None


def sample(cmd: list[str], every: float) -> tuple[float, int, dict, dict]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    root = proc.pid
    counts: dict = collections.defaultdict(collections.Counter)  # role -> state[:wait channel] -> samples
    schedstat: dict = {}  # (pid, tid) -> (role, seconds on a CPU, seconds runnable waiting for one), the latest read
    samples = 0
    start = time.perf_counter()
    while proc.poll() is None:
        for pid in [root, *_children(root)]:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                base = f"/proc/{pid}/task/{tid}"
                stat = _read(f"{base}/stat")
                if stat is None:
                    continue
                state = stat[stat.rindex(")") + 2]
                comm = stat[stat.index("(") + 1 : stat.rindex(")")]  # a thread's name: python's own are the program's
                role = ("parent" if pid == root else "worker") + (" main" if tid == str(pid) else f" {comm} threads")
                key = state
                if state != "R":
                    wchan = (_read(f"{base}/wchan") or "").strip()
                    key += f":{wchan}" if wchan and wchan != "0" else ""
                counts[role][key] += 1
                ran = (_read(f"{base}/schedstat") or "").split()
                if len(ran) >= 2:
                    schedstat[(pid, tid)] = (role, int(ran[0]) / 1e9, int(ran[1]) / 1e9)
        samples += 1
        time.sleep(every)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"the command failed (exit status {proc.returncode})")
    seconds: dict = collections.defaultdict(lambda: [0.0, 0.0])
    for role, on_cpu, waiting in schedstat.values():
        seconds[role][0] += on_cpu
        seconds[role][1] += waiting
    return wall, samples, counts, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=float, default=0.01, help="seconds between samples (default 0.01)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("give the command to sample after --")
    wall, samples, counts, seconds = sample(cmd, args.every)
    print(f"{' '.join(cmd)}\nwall {wall:.2f} s, {samples} samples (one every {wall / max(samples, 1) * 1000:.1f} ms)")
    for role in sorted(counts):
        states = counts[role]
        total = sum(states.values())
        shares = ", ".join(f"{k} {v / total:.0%}" for k, v in states.most_common(5))
        on_cpu, waiting = seconds[role]
        print(f"  {role:22s} {shares}; on a CPU {on_cpu:.1f} s, runnable waiting for a CPU {waiting:.1f} s")


if __name__ == "__main__":
    main()
