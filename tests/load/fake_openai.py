"""An OpenAI-compatible stand-in for vLLM servers on loopback, for `colo load`'s tests.

Streamed completions decode one token every `token_s`, slowed by every embedding or rerank request in flight on
any server of the same `Gpu` (the way a busy companion takes time slices from the LLM), so a probe finds the LLM
slower beside its companions. Every request is counted, and an API key, where set, is checked as vLLM does.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Gpu:
    """What the servers of one pair share: companions' requests in flight, and every request served."""

    token_s: float = 0.002
    slowdown_per_companion: float = 0.5
    pooling_s: float = 0.01
    api_key: str | None = None
    in_flight: int = 0
    served: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, path: str) -> None:
        with self.lock:
            self.served[path] = self.served.get(path, 0) + 1


def handler(gpu: Gpu) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's server does
        # TCP_NODELAY, as vLLM's server (asyncio sets it on every TCP transport): headers, body and each streamed
        # token leave at once, not after the client's delayed ACK of the write before (40 ms each)
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._json(200 if self.path == "/health" else 404, {})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if gpu.api_key and self.headers.get("Authorization") != f"Bearer {gpu.api_key}":
                self._json(401, {"error": "Unauthorized"})
                return
            gpu.count(self.path)
            if self.path == "/v1/completions" and body.get("stream"):
                self._stream(int(body["max_tokens"]))
            elif self.path in ("/v1/embeddings", "/rerank"):
                with gpu.lock:
                    gpu.in_flight += 1
                try:
                    time.sleep(gpu.pooling_s)
                finally:
                    with gpu.lock:
                        gpu.in_flight -= 1
                self._json(200, {"data": [{"embedding": [0.0]}]})
            else:
                self._json(404, {"error": self.path})

        def _stream(self, tokens: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(text: str) -> None:
                data = text.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            for i in range(tokens):
                time.sleep(gpu.token_s * (1 + gpu.slowdown_per_companion * gpu.in_flight))
                chunk(f"data: {json.dumps({'choices': [{'text': f' w{i}'}]})}\n\n")
            chunk(
                f"data: {json.dumps({'choices': [], 'usage': {'completion_tokens': tokens}})}\n\ndata: [DONE]\n\n"
            )
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


class Servers:
    """One fake server per role on free loopback ports, stopped on exit."""

    def __init__(self, gpu: Gpu, roles: tuple[str, ...] = ("llm", "embedding")) -> None:
        self.gpu = gpu
        self.servers = {role: ThreadingHTTPServer(("127.0.0.1", 0), handler(gpu)) for role in roles}
        for server in self.servers.values():
            server.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: half a second a server at its default interval
        self.threads = [
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            for s in self.servers.values()
        ]

    @property
    def ports(self) -> dict[str, int]:
        return {role: server.server_address[1] for role, server in self.servers.items()}

    def __enter__(self) -> Servers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers.values():
            server.shutdown()
            server.server_close()
