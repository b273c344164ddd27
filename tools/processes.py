"""What /proc says of a build under test: the processes of its session, and whether its signal handlers are in.

Shared by ``tests/cli/test_signals.py`` and ``benchmarks/signal_exit.py``, which start each build in its own session
(``start_new_session=True``) so that every process it forks can be found, and killed if something goes wrong.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def session_members(sid: int) -> list[int]:
    """Live processes (zombies included) of session ``sid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ...
                found.append(int(entry))
    return found


def catches(pid: int, sig: int = signal.SIGTERM) -> bool | None:
    """Whether process ``pid`` has a handler for ``sig`` (its SigCgt mask); None once the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    caught = int(status.split("SigCgt:", 1)[1].split()[0], 16)
    return bool(caught >> (sig - 1) & 1)
