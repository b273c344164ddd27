"""A stand-in for the Hugging Face hub on 127.0.0.1, for tests that run huggingface_hub's (and datasets') real
download code through ``HF_ENDPOINT``.

It answers the requests those clients make, in the hub's shapes: ``HEAD``/``GET /{repo}/resolve/{revision}/{path}``
(models; ``/datasets/{repo}/...`` for datasets) with the ``X-Repo-Commit``, ``ETag`` and ``Content-Length`` headers
the client requires, ``X-Error-Code`` on a 404 (``EntryNotFound``, ``RevisionNotFound``, ``RepoNotFound``), and
the JSON API ``/api/{models,datasets}/{repo}/revision/{revision}``, ``/tree/{revision}[/{path}]`` and
``/paths-info/{revision}`` that a dataset load lists files with.

Bounded: it listens on the loopback address only, answers at most ``max_requests`` requests and stops by itself
after ``lifetime`` seconds whatever the test does; the context manager stops it at once. Every request is kept in
``requests`` (method, path) so a test can see what the client asked for. Nothing here imports sftpack.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Repo:
    """One repository: its files at each commit, and branch names pointing at commits."""

    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)

    def commit_of(self, revision: str) -> str | None:
        revision = self.branches.get(revision, revision)
        return revision if revision in self.commits else None


class FakeHub:
    """``with FakeHub() as hub: hub.add_model(...); env["HF_ENDPOINT"] = hub.endpoint``."""

    def __init__(self, *, lifetime: float = 120.0, max_requests: int = 2000):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.max_requests = max_requests
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._deadline = threading.Timer(lifetime, self.stop)
        self._deadline.daemon = True
        self._stopped = False

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, kind: str, repo_id: str, commit: str, files: dict[str, bytes], branch: str | None = "main") -> None:
        """``kind`` is "model" or "dataset"; ``commit`` a 40-hex commit id; ``branch`` points at it."""
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), commit
        repo = self.repos.setdefault((kind, repo_id), Repo())
        repo.commits[commit] = dict(files)
        if branch:
            repo.branches[branch] = commit

    def add_model(self, repo_id: str, commit: str, files: dict[str, bytes], branch: str | None = "main") -> None:
        self.add("model", repo_id, commit, files, branch)

    def add_dataset(self, repo_id: str, commit: str, files: dict[str, bytes], branch: str | None = "main") -> None:
        self.add("dataset", repo_id, commit, files, branch)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        self._deadline.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._deadline.cancel()
        self._server.shutdown()
        self._server.server_close()

    def count(self, method: str, path: str) -> bool:
        """Record one request; False once the budget is spent (the server then answers 503 only)."""
        with self._lock:
            if len(self.requests) >= self.max_requests:
                return False
            self.requests.append((method, path))
            return True


def _etag(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet: the test reads hub.requests instead
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._form = parse_qs(self.rfile.read(length).decode("utf-8")) if length else {}
            self._answer(body=True)

        # ---------------------------------------------------------------------------------------------------
        def _answer(self, body: bool) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path)
            if not hub.count(self.command, self.path):
                self._send(503, b"", body, {"X-Error-Message": "fake hub: request budget spent"})
                return
            if path.startswith("/api/"):
                self._api(path[len("/api/"):], parse_qs(url.query), body)
            else:
                self._resolve(path.lstrip("/"), body)

        def _send(self, status: int, content: bytes, body: bool, headers: dict | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            if body:
                self.wfile.write(content)

        def _error(self, status: int, code: str, message: str, body: bool, commit: str | None = None) -> None:
            headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
            if commit:
                headers["X-Repo-Commit"] = commit
            self._send(status, json.dumps({"error": message}).encode(), body, headers)

        def _repo(self, kind: str, rest: str) -> tuple[Repo | None, str, str]:
            """Split ``org/name/...`` into the repository (if known), its id and the rest."""
            parts = rest.split("/")
            repo_id, tail = "/".join(parts[:2]), "/".join(parts[2:])
            return hub.repos.get((kind, repo_id)), repo_id, tail

        def _resolve(self, rest: str, body: bool) -> None:
            kind = "model"
            if rest.startswith("datasets/"):
                kind, rest = "dataset", rest[len("datasets/"):]
            repo, repo_id, tail = self._repo(kind, rest)
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository Not Found for url: {repo_id}", body)
            if not tail.startswith("resolve/"):
                return self._error(404, "EntryNotFound", f"not a resolve url: {tail}", body)
            revision, _, filename = tail[len("resolve/"):].partition("/")
            commit = repo.commit_of(revision)
            if commit is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body)
            files = repo.commits[commit]
            if filename not in files:
                return self._error(404, "EntryNotFound", f"{filename} does not exist at {revision}", body, commit)
            content = files[filename]
            self._send(200, content, body, {"X-Repo-Commit": commit, "ETag": f'"{_etag(content)}"',
                                            "Content-Type": "application/octet-stream"})

        def _api(self, rest: str, query: dict, body: bool) -> None:
            kind, _, rest = rest.partition("/")
            kind = {"models": "model", "datasets": "dataset"}.get(kind)
            if kind is None:
                return self._error(404, "EntryNotFound", "unknown api", body)
            repo, repo_id, tail = self._repo(kind, rest)
            if repo is None:
                return self._error(404, "RepoNotFound", f"Repository Not Found for url: {repo_id}", body)
            action, _, rest = tail.partition("/")
            revision, _, sub = rest.partition("/")
            if action == "" or (action == "revision" and revision):
                revision = revision or "main"
            commit = repo.commit_of(revision)
            if commit is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", body)
            files = repo.commits[commit]
            if action in ("", "revision"):
                info = {"id": repo_id, "sha": commit, "private": False, "gated": False, "disabled": False,
                        "siblings": [{"rfilename": name} for name in sorted(files)], "tags": [], "cardData": {}}
                return self._json(info, body)
            if action == "tree":
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                return self._json(_tree(files, sub.strip("/"), recursive), body)
            if action == "paths-info":
                wanted = getattr(self, "_form", {}).get("paths", [])
                return self._json([e for e in _entries(files) if e["path"] in wanted], body)
            return self._error(404, "EntryNotFound", f"unknown api action {action}", body)

        def _json(self, value, body: bool) -> None:
            self._send(200, json.dumps(value).encode(), body, {"Content-Type": "application/json"})

    return Handler


def _entries(files: dict[str, bytes]) -> list[dict]:
    """Every file and directory of a commit, as the hub's tree API lists them."""
    out, directories = [], set()
    for name, content in sorted(files.items()):
        parts = name.split("/")
        for depth in range(1, len(parts)):
            directories.add("/".join(parts[:depth]))
        out.append({"type": "file", "path": name, "size": len(content), "oid": hashlib.sha1(content).hexdigest()})
    out.extend({"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest()} for d in sorted(directories))
    return out


def _tree(files: dict[str, bytes], directory: str, recursive: bool) -> list[dict]:
    prefix = f"{directory}/" if directory else ""
    out = []
    for entry in _entries(files):
        if not entry["path"].startswith(prefix) or entry["path"] == directory:
            continue
        if recursive or "/" not in entry["path"][len(prefix):]:
            out.append(entry)
    return out
