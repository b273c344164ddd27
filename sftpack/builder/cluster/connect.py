"""Joining the Ray cluster a build runs on (``--ray ADDRESS``): where it cannot, one line naming the address and
the reason, before anything is written.

``ADDRESS`` is the head's ``HOST:PORT`` (its GCS), ``ray://HOST:PORT`` (Ray Client) or ``auto`` (the cluster this
process belongs to: ``RAY_ADDRESS``, or the one started on this machine). A process already connected (a trainer's
driver, a Ray task or actor) builds on its own connection and keeps it afterwards.
"""

from __future__ import annotations

import logging
import signal
import socket
from contextlib import contextmanager

from sftpack.base.arguments import argument
from sftpack.base.errors import UsageError

# How long a HOST:PORT address may take to answer a TCP connection before the build gives up on it: ray.init
# itself retries an unreachable GCS for about a minute before it says so.
REACH_SECONDS = 5.0


def named(address: str) -> str:
    """The option as the user wrote it, for the one-line errors: ``--ray ADDRESS`` or ``ray='ADDRESS'``."""
    flag = argument("ray")
    return f"{flag} {address}" if flag.startswith("--") else f"{flag}={address!r}"


def import_ray(address: str):
    try:
        import ray
    except ImportError as e:
        raise UsageError(f"{named(address)}: Ray is not installed here ({e}); pip install 'sftpack[ray]'") from None
    return ray


@contextmanager
def connected(address: str):
    """``ray``, connected to the cluster at ``address`` for the ``with`` block (disconnected after it unless it
    was connected before)."""
    ray = import_ray(address)
    if ray.is_initialized():
        yield ray
        return
    _check_reachable(address)
    # ray.init puts its own SIGTERM handler on the driver (an exit without cleanup): the build's handlers stay
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, configure_logging=False)
    except Exception as e:  # ConnectionError, RuntimeError, ValueError: whatever it is, it is the reason
        raise UsageError(f"{named(address)}: cannot join the Ray cluster ({_first_line(e)})") from None
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
    try:
        if not ray.cluster_resources().get("CPU"):
            raise UsageError(f"{named(address)}: the Ray cluster has no CPU to run the encoding tasks on")
        yield ray
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """A ``HOST:PORT`` address that does not answer is refused at once."""
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"{named(address)}: not a Ray address (HOST:PORT of the head, ray://HOST:PORT or auto)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise UsageError(f"{named(address)}: cannot reach the Ray cluster's head ({why})") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300]}" if text else type(e).__name__
