"""The probe's phases: companions alone, then per LLM concurrency the LLM alone and beside its busy companions.

Every phase is bounded: the LLM sends a fixed number of streamed completions at a fixed concurrency, the companions
keep `companion_concurrency` requests in flight until the LLM is done, and nothing runs past the phase's seconds
or the probe's deadline. Each worker keeps one connection, closed when its phase ends.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from colo.load.requests import Connection, Connector, Outcome, Target, send

MAX_CONCURRENCY = 256  # far beyond what one pair serves; a bound, not a target
BACKGROUND_REQUESTS = 100_000  # a companion's requests per phase, a bound the seconds reach first


@dataclass(frozen=True)
class LoadSettings:
    concurrencies: tuple[int, ...] = (1, 16)
    requests_per_slot: int = 2  # the LLM sends concurrency x this many requests per phase (at least 4)
    prompt_tokens: int = 512
    max_tokens: int = 128
    companion_concurrency: int = 4
    companion_prompt_tokens: int = 512
    phase_seconds: float = 60.0
    companion_seconds: float = 10.0  # the companions-alone phase
    max_seconds: float = 600.0  # the whole probe
    request_timeout_s: float = 120.0

    def llm_requests(self, concurrency: int) -> int:
        return max(4, concurrency * self.requests_per_slot)


@dataclass
class _Stream:
    """One target's requests in a phase: a bound on how many, the outcomes so far, the workers' connections."""

    target: Target
    limit: int
    background: bool  # a companion: only what it finished within the phase counts
    outcomes: list[Outcome] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    issued: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> int | None:
        with self.lock:
            if self.issued >= self.limit:
                return None
            self.issued += 1
            return self.issued

    def add(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)

    def cut(self) -> None:
        """End every request in flight: the phase's seconds are up."""
        with self.lock:
            connections = list(self.connections)
        for connection in connections:
            if connection.sock is not None:
                with contextlib.suppress(OSError, AttributeError):
                    connection.sock.shutdown(socket.SHUT_RDWR)


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(outcomes: Sequence[Outcome], wall_s: float) -> dict[str, Any]:
    done = [o for o in outcomes if o.ok]
    ttft = [o.ttft_s for o in done if o.ttft_s is not None]
    tpot = [t for o in done if (t := o.tpot_s) is not None]
    return {
        "requests": len(outcomes),
        "ok": len(done),
        "errors": sorted({o.error for o in outcomes if o.error})[:3],
        "wall_s": round(wall_s, 2),
        "requests_per_s": round(len(done) / wall_s, 2) if wall_s > 0 else None,
        "ttft_p50_ms": _ms(_percentile(ttft, 0.5)),
        "ttft_p90_ms": _ms(_percentile(ttft, 0.9)),
        "tpot_p50_ms": _ms(_percentile(tpot, 0.5)),
        "tpot_mean_ms": _ms(statistics.fmean(tpot)) if tpot else None,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


@dataclass(frozen=True)
class Phase:
    label: str
    llm_concurrency: int | None  # None: the LLM idles (companions alone)
    companions_busy: bool
    summaries: dict[str, dict[str, Any]]  # by role
    wall_s: float
    skipped: str | None = None


def _worker(
    connector: Connector, stream: _Stream, stop: threading.Event, settings: LoadSettings, seed: int
) -> None:
    connection = Connection(connector, stream.target.port, settings.request_timeout_s)
    with stream.lock:
        stream.connections.append(connection)
    kind = stream.target.kind
    tokens = settings.prompt_tokens if kind == "completions" else settings.companion_prompt_tokens
    try:
        while not stop.is_set() and (number := stream.take()) is not None:
            outcome = send(
                connection, stream.target, seed + number, prompt_tokens=tokens, max_tokens=settings.max_tokens
            )
            if stop.is_set() and (stream.background or not outcome.ok):
                break  # cut at the phase's end, or finished after it: not the phase's
            stream.add(outcome)
    finally:
        connection.close()


def run_phase(
    connector: Connector,
    label: str,
    llm: tuple[Target, int] | None,
    companions: Sequence[Target],
    settings: LoadSettings,
    seconds: float,
    seed: int,
) -> Phase:
    """`llm`: the LLM and its concurrency, or None; the phase ends when the LLM's requests are done (or, without
    it, after `seconds`), and never later than `seconds`; the companions stop with it."""
    stop = threading.Event()
    llm_stream = _Stream(llm[0], settings.llm_requests(llm[1]), background=False) if llm else None
    streams = [_Stream(target, BACKGROUND_REQUESTS, background=True) for target in companions]
    threads: list[threading.Thread] = []

    def spawn(stream: _Stream, count: int, base: int) -> list[threading.Thread]:
        made = [
            threading.Thread(
                target=_worker, args=(connector, stream, stop, settings, base + 1000 * i), daemon=True
            )
            for i in range(count)
        ]
        threads.extend(made)
        return made

    start = time.monotonic()
    for index, stream in enumerate(streams):
        spawn(stream, settings.companion_concurrency, seed + 10_000_000 * (index + 1))
    llm_threads = spawn(llm_stream, llm[1], seed) if llm_stream is not None and llm else []
    for thread in threads:
        thread.start()
    deadline = start + seconds
    for thread in llm_threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    if not llm_threads:
        stop.wait(max(0.0, deadline - time.monotonic()))
    stop.set()
    wall = time.monotonic() - start
    for stream in [*streams, *([llm_stream] if llm_stream else [])]:
        stream.cut()
    for thread in threads:
        thread.join(timeout=settings.request_timeout_s)
    summaries = {
        s.target.role: summary(s.outcomes, wall) for s in [*([llm_stream] if llm_stream else []), *streams]
    }
    return Phase(label, llm[1] if llm else None, bool(companions), summaries, round(wall, 2))


def probe(
    connector: Connector, llm: Target, companions: Sequence[Target], settings: LoadSettings
) -> list[Phase]:
    """Companions alone; then per concurrency the LLM alone and beside its busy companions, until the deadline."""
    deadline = time.monotonic() + settings.max_seconds
    plan: list[tuple[str, tuple[Target, int] | None, Sequence[Target], float]] = []
    if companions:
        plan.append(("companions alone", None, companions, settings.companion_seconds))
    for concurrency in settings.concurrencies:
        plan.append((f"llm c={concurrency} alone", (llm, concurrency), (), settings.phase_seconds))
        if companions:
            plan.append(
                (
                    f"llm c={concurrency} beside companions",
                    (llm, concurrency),
                    companions,
                    settings.phase_seconds,
                )
            )
    phases: list[Phase] = []
    for index, (label, load, busy, seconds) in enumerate(plan):
        left = deadline - time.monotonic()
        if left < min(seconds, 5.0):
            phases.append(Phase(label, load[1] if load else None, bool(busy), {}, 0.0, f"{left:.0f} s left"))
            continue
        phases.append(
            run_phase(connector, label, load, busy, settings, min(seconds, left), seed=index * 100_000_000)
        )
    return phases


def _change(after: float | None, before: float | None) -> float | None:
    if after is None or before is None or before <= 0:
        return None
    return round((after / before - 1) * 100, 1)


def costs(phases: Sequence[Phase], llm_role: str) -> dict[str, Any]:
    """Beside over alone, in percent, for the LLM at each concurrency; the companions' rate beside over alone."""
    found = {p.label: p for p in phases if not p.skipped}
    alone_companions = found.get("companions alone")
    result: dict[str, Any] = {}
    for phase in phases:
        if not phase.companions_busy or phase.llm_concurrency is None or phase.skipped:
            continue
        alone = found.get(f"llm c={phase.llm_concurrency} alone")
        if alone is None:
            continue
        before, after = alone.summaries[llm_role], phase.summaries[llm_role]
        entry: dict[str, Any] = {
            "ttft_p50_percent": _change(after["ttft_p50_ms"], before["ttft_p50_ms"]),
            "tpot_p50_percent": _change(after["tpot_p50_ms"], before["tpot_p50_ms"]),
        }
        if alone_companions is not None:
            entry["companions_rate_percent"] = {
                role: _change(summary["requests_per_s"], alone_companions.summaries[role]["requests_per_s"])
                for role, summary in phase.summaries.items()
                if role != llm_role and role in alone_companions.summaries
            }
        result[f"c={phase.llm_concurrency}"] = entry
    return result
