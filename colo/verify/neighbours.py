"""Why a server got less than planned: a neighbour started before it on the same GPU holds more than planned.

From vLLM 0.34 a server no longer refuses to start on a GPU fuller than its budget: its extensible KV cache is
sized from the memory free after its own warm-up (v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes:
`min(requested - non_kv_used, free + committed - margin) - transient`), so a server started later gets less KV
when one started before it holds more than the plan gave it, and says nothing about it. Each server's own log
tells what it holds (its KV pool, weights, CUDA graphs) and, for 0.34, what it found free after warm-up; this
module puts the two sides of a pair together in start order and names the neighbour and the bytes.

A later server is short when its free memory after warm-up is below the plan's beyond the term's tolerance;
where the plan states no such figure (a pool sized from the profile, or pinned), when its KV pool is. A neighbour holds more when any of its KV pool, weights or CUDA graphs is above the plan's
beyond that term's tolerance; the excess is their sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from colo.catalog import GIB
from colo.verify.startup_log import StartupLog
from colo.verify.terms import TERM
from colo.vllm import ProcessBudget

HeldTerm = Literal["kv_pool", "weights", "cuda_graph"]
HELD_TERMS: tuple[HeldTerm, ...] = ("kv_pool", "weights", "cuda_graph")
ShortTerm = Literal["free_after_warmup", "kv_pool"]
_WHAT = {
    "free_after_warmup": "free memory after its warm-up",
    "kv_pool": "KV cache",
    "weights": "weights",
    "cuda_graph": "CUDA graphs",
}


@dataclass(frozen=True)
class Footprint:
    """One server's figures, in bytes, as its plan states them or as its log reports them (None: not stated)."""

    name: str
    held: dict[HeldTerm, int | None]
    free_after_warmup: int | None = None  # vLLM 0.34+: free device memory after this server's warm-up


def planned_free_after_warmup(budget: ProcessBudget) -> int | None:
    """The free device memory the plan expects this server's "Memory after warmup: F GiB free" to report; None
    where its pool is not sized after warm-up (before 0.34, or pinned): the comparison falls back on the pool."""
    return budget.measured.free_after_warmup_bytes if budget.measured is not None else None


def planned_footprint(name: str, budget: ProcessBudget) -> Footprint:
    kv = budget.kv_bytes if budget.capacity is not None else None
    held: dict[HeldTerm, int | None] = {
        "kv_pool": kv,
        "weights": budget.weights_bytes,
        "cuda_graph": budget.graphs.bytes,
    }
    return Footprint(name, held, planned_free_after_warmup(budget))


def _bytes(gib: float | None) -> int | None:
    return None if gib is None else round(gib * GIB)


def observed_footprint(name: str, log: StartupLog) -> Footprint:
    held: dict[HeldTerm, int | None] = {
        "kv_pool": _bytes(log.kv_pool_gib),
        "weights": _bytes(log.weights_gib),
        "cuda_graph": _bytes(log.graph_gib),
    }
    free = log.measured_kv.free_gib if log.measured_kv is not None else None
    return Footprint(name, held, _bytes(free))


@dataclass(frozen=True)
class NeighbourTookMore:
    """`server` got less than planned while `neighbour`, started before it on the same GPU, holds more."""

    server: str
    neighbour: str
    short_of: ShortTerm
    short_bytes: int
    excess_bytes: int
    excess_by_term: tuple[tuple[HeldTerm, int], ...]

    def describe(self) -> str:
        parts = ", ".join(f"{_WHAT[term]} +{_gib(amount)} GiB" for term, amount in self.excess_by_term)
        return (
            f"{self.server} got {_gib(self.short_bytes)} GiB less {_WHAT[self.short_of]} than planned because "
            f"{self.neighbour}, started before it on the same GPU, holds {_gib(self.excess_bytes)} GiB more than "
            f"planned ({parts}): vLLM sizes a later server from what its neighbours leave free"
        )

    def view(self) -> dict[str, object]:
        return {
            "neighbour": self.neighbour,
            "short_of": self.short_of,
            "short_bytes": self.short_bytes,
            "excess_bytes": self.excess_bytes,
            "excess_by_term": dict(self.excess_by_term),
        }


def _gib(amount: int) -> str:
    return f"{amount / GIB:.2f}"


def _beyond(term: str, planned: int, observed: int) -> int:
    """How far `observed` is above `planned`, in bytes, where that is beyond the term's tolerance; else 0."""
    tolerance = TERM[term].tolerance
    over = observed - planned
    if over <= 0 or (tolerance is not None and tolerance.allows(planned / GIB, observed / GIB)):
        return 0
    return over


def _shortfall(planned: Footprint, observed: Footprint) -> tuple[ShortTerm, int] | None:
    if planned.free_after_warmup is not None and observed.free_after_warmup is not None:
        short = _beyond("free_after_warmup", observed.free_after_warmup, planned.free_after_warmup)
        return ("free_after_warmup", short) if short else None
    kv_planned, kv_observed = planned.held["kv_pool"], observed.held["kv_pool"]
    if kv_planned is None or kv_observed is None:
        return None
    short = _beyond("kv_pool", kv_observed, kv_planned)
    return ("kv_pool", short) if short else None


def _excess(planned: Footprint, observed: Footprint) -> tuple[tuple[HeldTerm, int], ...]:
    found = []
    for term in HELD_TERMS:
        want, got = planned.held[term], observed.held[term]
        if want is not None and got is not None and (over := _beyond(term, want, got)):
            found.append((term, over))
    return tuple(found)


def neighbours_took_more(servers: Sequence[tuple[Footprint, Footprint | None]]) -> list[NeighbourTookMore]:
    """Every (later server, earlier neighbour) of one GPU where the later one is short and the earlier one holds
    more than planned. `servers`: (planned, observed) in start order; observed None for a server not read."""
    findings = []
    for index, (planned, observed) in enumerate(servers):
        short = _shortfall(planned, observed) if observed is not None else None
        if short is None:
            continue
        for earlier_planned, earlier_observed in servers[:index]:
            if earlier_observed is None or not (excess := _excess(earlier_planned, earlier_observed)):
                continue
            findings.append(
                NeighbourTookMore(
                    server=planned.name,
                    neighbour=earlier_planned.name,
                    short_of=short[0],
                    short_bytes=short[1],
                    excess_bytes=sum(amount for _, amount in excess),
                    excess_by_term=excess,
                )
            )
    return findings
