"""A bounded load on loopback: streamed completions (time to first token, decode rate), embeddings, scores.

Prompts are words of the word-level tokenizer, so a prompt of n words is n tokens. Completions ignore EOS,
so every request decodes exactly `max_tokens` tokens whatever the random weights sample.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["completions", "embeddings", "rerank"]
FIRST_WORD_ID = 1000  # clear of the special ids near the end of Qwen's vocabulary and of the unknown word


def words(count: int, seed: int) -> str:
    """`count` distinct-looking words; different seeds give different prompts (no prefix-cache hits)."""
    return " ".join(f"w{FIRST_WORD_ID + (seed * 7919 + i * 104729) % 100000}" for i in range(count))


@dataclass(frozen=True)
class ClientSpec:
    """One stream of requests to one server."""

    server: str  # the plan's server name
    port: int
    model: str  # the served model name
    kind: Kind
    concurrency: int
    requests: int | None = None  # None: keep going until the phase ends (background load)
    prompt_tokens: int = 512
    max_tokens: int = 128

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ClientSpec:
        return ClientSpec(**{key: data[key] for key in data if key in ClientSpec.__dataclass_fields__})


@dataclass
class RequestResult:
    ok: bool
    status: int
    latency_s: float
    ttft_s: float | None = None
    output_tokens: int = 0
    decode_s: float | None = None  # first token to last
    error: str | None = None


def _post(port: int, path: str, body: Mapping[str, Any], timeout_s: float) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    return connection.getresponse()


def _stream_completion(spec: ClientSpec, seed: int, timeout_s: float) -> RequestResult:
    body = {
        "model": spec.model,
        "prompt": words(spec.prompt_tokens, seed),
        "max_tokens": spec.max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.monotonic()
    response = _post(spec.port, "/v1/completions", body, timeout_s)
    if response.status != 200:
        text = response.read().decode(errors="replace")[:300]
        return RequestResult(False, response.status, time.monotonic() - start, error=text)
    first = last = None
    tokens = chunks = 0
    for raw in response:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        event = json.loads(line[5:])
        if event.get("choices"):
            now = time.monotonic()
            first = first if first is not None else now
            last = now
            chunks += 1
        if event.get("usage"):
            tokens = int(event["usage"].get("completion_tokens") or 0)
    end = time.monotonic()
    return RequestResult(
        True,
        200,
        end - start,
        ttft_s=None if first is None else first - start,
        output_tokens=tokens or chunks,
        decode_s=None if first is None or last is None else last - first,
    )


def _rerank_body(spec: ClientSpec, seed: int) -> dict[str, Any]:
    half = max(1, spec.prompt_tokens // 2)
    return {
        "model": spec.model,
        "query": words(16, seed),
        "documents": [words(half, seed + 1), words(half, seed + 2)],
    }


def _one_shot(spec: ClientSpec, seed: int, timeout_s: float) -> RequestResult:
    if spec.kind == "embeddings":
        path, body = "/v1/embeddings", {"model": spec.model, "input": words(spec.prompt_tokens, seed)}
    else:
        path, body = "/rerank", _rerank_body(spec, seed)
    start = time.monotonic()
    response = _post(spec.port, path, body, timeout_s)
    text = response.read().decode(errors="replace")
    ok = response.status == 200
    return RequestResult(ok, response.status, time.monotonic() - start, error=None if ok else text[:300])


def one_request(spec: ClientSpec, seed: int, timeout_s: float = 300.0) -> RequestResult:
    try:
        if spec.kind == "completions":
            return _stream_completion(spec, seed, timeout_s)
        return _one_shot(spec, seed, timeout_s)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return RequestResult(False, 0, 0.0, error=f"{type(exc).__name__}: {exc}")


@dataclass
class _Counter:
    limit: int | None
    issued: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> int | None:
        with self.lock:
            if self.limit is not None and self.issued >= self.limit:
                return None
            self.issued += 1
            return self.issued


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


def summarise(spec: ClientSpec, results: list[RequestResult], wall_s: float) -> dict[str, Any]:
    done = [r for r in results if r.ok]
    ttft = [r.ttft_s for r in done if r.ttft_s is not None]
    tpot = [r.decode_s / (r.output_tokens - 1) for r in done if r.decode_s and r.output_tokens > 1]
    tokens = sum(r.output_tokens for r in done)
    return {
        "server": spec.server,
        "kind": spec.kind,
        "concurrency": spec.concurrency,
        "prompt_tokens": spec.prompt_tokens,
        "max_tokens": spec.max_tokens if spec.kind == "completions" else None,
        "requests": len(results),
        "ok": len(done),
        "errors": sorted({f"{r.status} {r.error}" for r in results if not r.ok})[:5],
        "wall_s": round(wall_s, 4),  # as precise as the latencies: a phase of a fake server lasts tens of ms
        "latency_p50_s": _percentile([r.latency_s for r in done], 0.5),
        "ttft_p50_s": _percentile(ttft, 0.5),
        "ttft_p90_s": _percentile(ttft, 0.9),
        "ttft_mean_s": round(statistics.fmean(ttft), 4) if ttft else None,
        "tpot_p50_s": _percentile(tpot, 0.5),
        "requests_per_s": round(len(done) / wall_s, 2) if wall_s > 0 else None,
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / wall_s, 1) if wall_s > 0 and tokens else None,
    }


def run_client(spec: ClientSpec, stop: threading.Event, seed_base: int) -> dict[str, Any]:
    """Keep `concurrency` requests in flight until `requests` are done or `stop` is set."""
    counter = _Counter(spec.requests)
    results: list[RequestResult] = []
    lock = threading.Lock()

    def worker() -> None:
        while not stop.is_set():
            number = counter.take()
            if number is None:
                return
            result = one_request(spec, seed_base + number)
            with lock:
                results.append(result)

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=spec.concurrency) as pool:
        for _ in range(spec.concurrency):
            pool.submit(worker)
    return summarise(spec, results, time.monotonic() - start)


def run_phase(clients: list[ClientSpec], *, duration_s: float, seed_base: int = 0) -> list[dict[str, Any]]:
    """Run every client at once. The phase ends when each client with a request count is done (or, with
    none, after `duration_s`), and never later than `duration_s`; background clients stop with it."""
    stop = threading.Event()
    background = threading.Event()
    summaries: dict[int, dict[str, Any]] = {}

    def run(index: int, spec: ClientSpec) -> None:
        summaries[index] = run_client(
            spec, background if spec.requests is None else stop, seed_base + 100000 * index
        )

    threads = [threading.Thread(target=run, args=(i, spec), daemon=True) for i, spec in enumerate(clients)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + duration_s
    counted = [t for t, spec in zip(threads, clients, strict=True) if spec.requests is not None]
    for thread in counted:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    if not counted:
        time.sleep(max(0.0, deadline - time.monotonic()))
    stop.set()
    background.set()
    for thread in threads:
        thread.join(timeout=330)
    return [summaries.get(i, {"server": spec.server, "unfinished": True}) for i, spec in enumerate(clients)]
