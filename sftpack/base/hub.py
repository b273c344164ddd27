"""Whether the Hugging Face hub can be reached, and how the offline state is said: every hub code path (the
tokenizer at its pinned revision, ``--source hub``, a hub dataset id) asks here first."""

from __future__ import annotations

import os
import re
import socket
from contextlib import contextmanager
from urllib.parse import urlparse


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def offline_reason() -> str:
    """Why the hub is not used: ``offline (HF_HUB_OFFLINE=1)`` when that is set, else unreachable."""
    if hub_offline():
        return f"offline (HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE']})"
    return "the Hugging Face hub is unreachable"


def hub_reachable(timeout: float = 3.0) -> bool:
    """A fast check before huggingface_hub's own retries (which take ~25 s to give up offline): the host and
    port of ``HF_ENDPOINT`` (default https://huggingface.co) answer."""
    if hub_offline():
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    return reachable(endpoint.hostname or "huggingface.co", timeout, port)


def reachable(host: str, timeout: float = 3.0, port: int = 443) -> bool:
    """Whether ``host``'s ``port`` answers within ``timeout`` (downloads that have no timeout of their own would
    hang offline)."""
    try:  # the timeout is this connection's own: the process-wide socket default is never touched
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_commit(value) -> bool:
    """Whether a hub's answer is a commit id: 40 lowercase hex digits, nothing else."""
    return isinstance(value, str) and _COMMIT.fullmatch(value) is not None


DEADLINE_VARIABLE = "SFTPACK_HUB_DEADLINE"  # seconds: overrides every hub step's own deadline


def deadline(default: float) -> float:
    """A hub step's overall deadline in seconds: ``SFTPACK_HUB_DEADLINE`` when set (a positive number), else
    ``default``."""
    value = os.environ.get(DEADLINE_VARIABLE)
    try:
        seconds = float(value) if value else default
    except ValueError:
        seconds = default
    return seconds if seconds > 0 else default


def within_deadline(step, seconds: float, what: str):
    """``step()``'s result, or :class:`~sftpack.base.errors.UsageError` once ``seconds`` have passed without one:
    a hub that answers one byte a second, or never, must not hold a command forever (huggingface_hub's timeouts are
    per read, its retries many). The step runs on a daemon thread, which the exiting process takes with it."""
    import threading

    from sftpack.base.errors import UsageError

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = step()
        except BaseException as e:  # handed to the caller's thread
            outcome["error"] = e

    thread = threading.Thread(target=run, name="sftpack-hub", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise UsageError(f"{what}: the hub gave no complete answer within {seconds:g} s (set {DEADLINE_VARIABLE}=SECONDS "
                         "to wait longer)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextmanager
def quiet_hub():
    """huggingface_hub's own retry warnings and progress bars silenced: a failed download is sftpack's one line."""
    import logging

    import huggingface_hub.file_download  # noqa: F401  (its import sets the library logger's level: first)
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    logger = logging.getLogger("huggingface_hub")
    level, bars = logger.level, are_progress_bars_disabled()
    logger.setLevel(logging.ERROR)
    disable_progress_bars()
    try:
        yield
    finally:
        logger.setLevel(level)
        if not bars:
            enable_progress_bars()
