"""A local HTTP server that answers the Hugging Face Hub's file API the way huggingface_hub calls it.

What it speaks (huggingface_hub 2.x, hf_api.py and file_download.py):
- `GET /api/models/<id>[/revision/<rev>]`: the model-info JSON (`id` in the Hub's own spelling, `sha`, `siblings`,
  `gated`);
- `HEAD|GET /<id>/resolve/<rev>/<path>`: a file, with `ETag`, `X-Repo-Commit` and `Content-Length`, and byte ranges
  (`Range: bytes=a-b` -> 206), which is how safetensors headers are read;
- refusals as the Hub sends them, told apart by `X-Error-Code`: RepoNotFound (401 without a token, 404 with one),
  RevisionNotFound and EntryNotFound (404), GatedRepo (401 without a token, 403 with one that has no access), and
  401 "Invalid credentials in Authorization header" for a token the Hub does not know.
Ids are matched case-insensitively, as on the Hub; a resolve URL in another spelling is redirected (307) to the
Hub's own, which huggingface_hub follows. Every request is recorded, so a test can count what a read cost.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)$")
INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<revision>[^/]+))?$")
RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass(frozen=True)
class SparseFile:
    """A file whose first bytes are given and whose remainder reads as zeros: a safetensors header with its
    tensors' bytes left out, served at the checkpoint's real length."""

    head: bytes
    size: int

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        end = min(end, self.size)
        given = self.head[start:end] if start < len(self.head) else b""
        return given + bytes(max(0, end - max(start, len(self.head))))


Content = bytes | SparseFile


def _length(content: Content) -> int:
    return len(content) if isinstance(content, bytes) else content.size


def _slice(content: Content, start: int, end: int) -> bytes:
    return content[start:end] if isinstance(content, bytes) else content.read(start, end)


def etag(content: Content) -> str:
    """The Hub's ETag: a small file's git blob sha1; a large (LFS) file's sha256, here of what is known of it."""
    if isinstance(content, bytes):
        return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    return hashlib.sha256(content.head + str(content.size).encode()).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """A repository at one commit: its files by path."""

    commit: str
    files: dict[str, Content]


@dataclass
class HubRepo:
    repo_id: str  # the Hub's own spelling
    snapshots: dict[str, Snapshot]  # by commit
    refs: dict[str, str]  # branch or tag -> commit; "main" is the default
    gated: bool = False

    def commit_for(self, revision: str) -> str | None:
        if revision in self.snapshots:
            return revision
        return self.refs.get(revision)


def commit_of(files: dict[str, Content]) -> str:
    """A stable 40-hex commit id for a snapshot whose real commit no copy names."""
    digest = hashlib.sha1()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + hashlib.sha1(_slice(files[path], 0, 1 << 20)).digest())
    return digest.hexdigest()


@dataclass
class LocalHub:
    """The server; `with LocalHub(repos) as hub:` serves on loopback until the block ends."""

    repos: list[HubRepo]
    tokens_with_access: set[str] = field(default_factory=set)  # tokens gated repositories accept
    known_tokens: set[str] = field(default_factory=set)  # tokens the Hub knows (with or without access)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every request

    def __post_init__(self) -> None:
        self._by_key = {repo.repo_id.lower(): repo for repo in self.repos}
        self._server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start the hub first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LocalHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hub._answer(self, body=True)

            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def log_message(self, *args: object) -> None:  # quiet: the test reads `requests`
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for serve_forever's next poll: every 10 ms, as a hundred tests start and stop a hub
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def repo(self, repo_id: str) -> HubRepo | None:
        return self._by_key.get(repo_id.lower())

    # --- answering ---------------------------------------------------------------------------------------

    def _refuse(self, handler: BaseHTTPRequestHandler, status: int, code: str | None, message: str) -> None:
        handler.send_response(status)
        if code:
            handler.send_header("X-Error-Code", code)
        handler.send_header("X-Error-Message", message)
        data = json.dumps({"error": message}).encode()
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)

    def _token(self, handler: BaseHTTPRequestHandler) -> str | None:
        value = handler.headers.get("Authorization", "")
        return value.removeprefix("Bearer ").strip() or None if value.startswith("Bearer ") else None

    def _answer(self, handler: BaseHTTPRequestHandler, *, body: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        self.requests.append((handler.command, path))
        token = self._token(handler)
        if token is not None and token not in self.known_tokens:
            return self._refuse(handler, 401, None, "Invalid credentials in Authorization header")
        if (match := INFO.match(path)) and body:
            return self._info(handler, match["repo"], match["revision"] or "main", token)
        if match := RESOLVE.match(path):
            return self._file(handler, match["repo"], match["revision"], match["path"], token, body)
        return self._refuse(handler, 404, None, "Not Found")

    def _find(
        self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str, token: str | None
    ) -> tuple[HubRepo, Snapshot] | None:
        repo = self.repo(repo_id)
        if repo is None:
            self._refuse(handler, 404 if token else 401, "RepoNotFound", "Repository not found")
            return None
        commit = repo.commit_for(revision)
        if commit is None:
            self._refuse(handler, 404, "RevisionNotFound", "Invalid rev id: " + revision)
            return None
        return repo, repo.snapshots[commit]

    def _info(self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str, token: str | None) -> None:
        found = self._find(handler, repo_id, revision, token)
        if found is None:
            return
        repo, snapshot = found
        data = json.dumps(
            {
                "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "sha": snapshot.commit,
                "private": False,
                "gated": "manual" if repo.gated else False,
                "disabled": False,
                "siblings": [{"rfilename": name} for name in sorted(snapshot.files)],
            }
        ).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _file(
        self,
        handler: BaseHTTPRequestHandler,
        repo_id: str,
        revision: str,
        name: str,
        token: str | None,
        body: bool,
    ) -> None:
        found = self._find(handler, repo_id, revision, token)
        if found is None:
            return
        repo, snapshot = found
        if repo_id != repo.repo_id:  # the Hub redirects another spelling of an id to its own
            handler.send_response(307)
            handler.send_header("Location", f"/{repo.repo_id}/resolve/{revision}/{name}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if repo.gated and token not in self.tokens_with_access:
            message = "Access to model " + repo.repo_id + " is restricted. You must have access to it."
            return self._refuse(handler, 403 if token else 401, "GatedRepo", message)
        content = snapshot.files.get(name)
        if content is None:
            return self._refuse(handler, 404, "EntryNotFound", f'{name} does not exist on "{revision}"')
        self._send(handler, snapshot.commit, content, body)

    def _send(self, handler: BaseHTTPRequestHandler, commit: str, content: Content, body: bool) -> None:
        size = _length(content)
        start, end, status = 0, size, 200
        if (wanted := RANGE.match(handler.headers.get("Range", ""))) is not None:
            start = int(wanted[1])
            end = min(size, int(wanted[2]) + 1) if wanted[2] else size
            status = 206
        data = _slice(content, start, end)
        handler.send_response(status)
        handler.send_header("ETag", f'"{etag(content)}"')
        handler.send_header("X-Repo-Commit", commit)
        handler.send_header("Accept-Ranges", "bytes")
        handler.send_header("Content-Length", str(len(data)))
        if status == 206:
            handler.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        handler.end_headers()
        if body:
            handler.wfile.write(data)
