"""One request to a vLLM server, over a socket the caller connects: a streamed completion (time to first token,
time per output token), an embedding, or a rerank. Prompts are distinct runs of words, so no two requests share
a prefix that vLLM's prefix cache could serve."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["completions", "embeddings", "rerank"]
# port -> a connected socket to the server listening on that port (loopback, or a port-forward into the pod)
Connector = Callable[[int], socket.socket]


def words(count: int, seed: int) -> str:
    """`count` distinct-looking words; different seeds give different prompts (no prefix-cache hits)."""
    return " ".join(f"w{(seed * 7919 + i * 104729) % 100000}" for i in range(count))


@dataclass(frozen=True)
class Target:
    """A server as the load reaches it."""

    role: str
    port: int
    model: str  # the served model name
    kind: Kind
    api_key: str | None = None


@dataclass(frozen=True)
class Outcome:
    ok: bool
    latency_s: float
    ttft_s: float | None = None
    output_tokens: int = 0
    decode_s: float | None = None  # first token to last
    error: str | None = None

    @property
    def tpot_s(self) -> float | None:
        if self.decode_s is None or self.output_tokens < 2:
            return None
        return self.decode_s / (self.output_tokens - 1)


class Connection(http.client.HTTPConnection):
    """HTTP/1.1 over whatever socket the connector gives; kept alive between requests of one worker."""

    def __init__(self, connector: Connector, port: int, timeout_s: float) -> None:
        super().__init__("localhost", port, timeout=timeout_s)
        self._connector = connector

    def connect(self) -> None:
        self.sock = self._connector(self.port)
        self.sock.settimeout(self.timeout)
        # http.client sends a request's headers and body apart: without TCP_NODELAY (which its own connect()
        # sets) the body waits for the headers' delayed ACK, 40 ms a request on a kept-alive Linux connection,
        # all of it added to the TTFT and latency measured. A port-forward's socket may be no TCP socket.
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _headers(target: Target) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if target.api_key:
        headers["Authorization"] = f"Bearer {target.api_key}"
    return headers


def _post(
    connection: Connection, target: Target, path: str, body: Mapping[str, Any]
) -> http.client.HTTPResponse:
    connection.request("POST", path, body=json.dumps(body), headers=_headers(target))
    return connection.getresponse()


def _stream(connection: Connection, target: Target, prompt: str, max_tokens: int) -> Outcome:
    body = {
        "model": target.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "ignore_eos": True,  # vLLM's own field: every request decodes exactly max_tokens
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.monotonic()
    response = _post(connection, target, "/v1/completions", body)
    if response.status != 200:
        text = response.read().decode(errors="replace")[:300]
        return Outcome(False, time.monotonic() - start, error=f"{response.status} {text}")
    first = last = None
    tokens = chunks = 0
    for raw in response:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        event = json.loads(line[5:])
        if event.get("choices"):
            last = time.monotonic()
            first = first if first is not None else last
            chunks += 1
        if event.get("usage"):
            tokens = int(event["usage"].get("completion_tokens") or 0)
    end = time.monotonic()
    return Outcome(
        True,
        end - start,
        ttft_s=None if first is None else first - start,
        output_tokens=tokens or chunks,
        decode_s=None if first is None or last is None else last - first,
    )


def _pooling(connection: Connection, target: Target, seed: int, prompt_tokens: int) -> Outcome:
    body: dict[str, Any]
    if target.kind == "embeddings":
        path, body = "/v1/embeddings", {"model": target.model, "input": words(prompt_tokens, seed)}
    else:
        half = max(1, prompt_tokens // 2)
        path = "/rerank"
        body = {
            "model": target.model,
            "query": words(16, seed),
            "documents": [words(half, seed + 1), words(half, seed + 2)],
        }
    start = time.monotonic()
    response = _post(connection, target, path, body)
    text = response.read().decode(errors="replace")
    ok = response.status == 200
    return Outcome(ok, time.monotonic() - start, error=None if ok else f"{response.status} {text[:300]}")


def send(
    connection: Connection, target: Target, seed: int, *, prompt_tokens: int, max_tokens: int
) -> Outcome:
    """One request; a transport failure is an outcome (and the connection is dropped for a fresh one)."""
    try:
        if target.kind == "completions":
            return _stream(connection, target, words(prompt_tokens, seed), max_tokens)
        return _pooling(connection, target, seed, prompt_tokens)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        connection.close()
        return Outcome(False, 0.0, error=f"{type(exc).__name__}: {exc}")
