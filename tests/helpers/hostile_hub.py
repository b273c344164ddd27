"""A hub on 127.0.0.1 that misbehaves in one chosen way, for the tests of what sftpack does with it: it answers the
repository API with a commit id (``commit``, which may be anything), and every file download either never answers
(``"silent"``), trickles one byte a second (``"slow"``), or promises more bytes than it sends and hangs up
(``"truncated"``). ``"silent"`` also leaves the API unanswered. Bounded like :mod:`helpers.fake_hub`: loopback only,
stopped by the context manager or after ``lifetime`` seconds. Nothing here imports sftpack."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HostileHub:
    def __init__(self, behaviour: str, commit: str = "e" * 40, lifetime: float = 120.0):
        assert behaviour in ("silent", "slow", "truncated", "ok")
        self.behaviour, self.commit = behaviour, commit
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "HostileHub":
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            self._timer.cancel()
            self._server.shutdown()
            self._server.server_close()


SIZE = 1000  # the bytes every file is said to hold


def _handler(hub: HostileHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            if hub.behaviour == "silent":
                hub.stopping.wait()
                return
            if self.path.startswith("/api/"):
                repo = "/".join(self.path.split("/")[3:5])
                content = json.dumps({"id": repo, "sha": hub.commit, "siblings": [], "private": False}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                if body:
                    self.wfile.write(content)
                return
            self.send_response(200)
            self.send_header("X-Repo-Commit", hub.commit)
            self.send_header("ETag", '"' + "a" * 64 + '"')
            self.send_header("Content-Length", str(SIZE))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if not body:
                return
            try:
                if hub.behaviour == "slow":
                    for _ in range(SIZE):
                        if hub.stopping.wait(1.0):
                            return
                        self.wfile.write(b"x")
                        self.wfile.flush()
                elif hub.behaviour == "truncated":
                    self.wfile.write(b"x" * 10)
                    self.wfile.flush()
                    time.sleep(0.05)
                    self.close_connection = True
                else:
                    self.wfile.write(b"x" * SIZE)
            except OSError:  # the client gave up
                pass

    return Handler
