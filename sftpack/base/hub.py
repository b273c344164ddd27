"""Whether the Hugging Face hub can be reached, and how the offline state is said: every hub code path (the
tokenizer at its pinned revision, ``--source hub``, a hub dataset id) asks here first."""

from __future__ import annotations

import os
import socket
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
