"""Planned against observed, term by term, for one server; and the verdict over every server read.

Planned figures come from the server's budget in the plan. Observed figures come from its startup log and,
where it was read, its /metrics. A term the log does not print is not compared (older releases print no
summary line, an eager server captures no graphs). The summary line splits the usage differently from
0.27 on: before, weights, activation and non-torch growth each; after, "consumed" (weights + non-torch)
and an activation figure that includes the CUDA-graph estimate vLLM took off the pool, so the planned side
is summed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from colo.catalog import GIB
from colo.verify.metrics import CacheConfigInfo
from colo.verify.neighbours import NeighbourTookMore
from colo.verify.startup_log import StartupLog
from colo.verify.terms import TERMS, Term
from colo.vllm import ProcessBudget, geometry_for, same_release

Value = float | int | str


class Verdict(IntEnum):
    """Also the exit code of `colo verify`."""

    WITHIN = 0  # every term compared is within its tolerance
    PLAN_WRONG = 1  # some term is off: the plan was wrong
    UNREADABLE = 2  # a server (or all of them) could not be read


@dataclass(frozen=True)
class TermResult:
    term: Term
    planned: Value | None
    observed: Value | None
    ok: bool

    @property
    def deviation(self) -> float | None:
        if isinstance(self.planned, str) or isinstance(self.observed, str):
            return None
        if self.planned is None or self.observed is None:
            return None
        return float(self.observed) - float(self.planned)

    @property
    def relative(self) -> float | None:
        deviation = self.deviation
        if deviation is None or not self.planned:
            return None
        return deviation / abs(float(self.planned))


@dataclass(frozen=True)
class ServerCheck:
    pair: str
    role: str
    name: str
    source: str  # where the log was read: a file or pod/container
    results: tuple[TermResult, ...] = ()
    unread: str | None = None  # why nothing could be compared
    error: str | None = None  # the startup error vLLM logged, as logged
    notes: tuple[str, ...] = field(default_factory=tuple)
    # the device total vLLM logged where it is not the plan's: a fact about the GPU, which every server on it
    # logs alike, so the text report says it once per GPU (colo.verify.report)
    device_note: str | None = None
    # neighbours started before it on the same GPU that hold more than planned while it got less
    took_more: tuple[NeighbourTookMore, ...] = ()

    @property
    def verdict(self) -> Verdict:
        if self.unread is not None:
            return Verdict.UNREADABLE
        return Verdict.PLAN_WRONG if self.first_off else Verdict.WITHIN

    @property
    def first_off(self) -> TermResult | None:
        """The earliest term off, in the order vLLM computes them: the likely cause of the later ones."""
        return next((result for result in self.results if not result.ok), None)


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def planned_figures(
    budget: ProcessBudget, *, summary_consumed: bool, release: str | None = None, returned_before: int = 0
) -> dict[str, Value]:
    """What the plan says this process logs; `summary_consumed`: the release logs the 0.27+ summary;
    `release`: the release the server runs, where its rules are another's (vllm.assumeRulesOf);
    `returned_before`: what the servers started before it on its GPU hold below their footprint while idle
    (colo.verify.idle), which a first start in order finds free."""
    spec = budget.spec
    in_budget_graphs = budget.graphs.estimate_bytes if budget.graph_estimate_in_budget else 0
    planned: dict[str, Value] = {
        "release": release or spec.vllm_version,
        "utilization": spec.utilization,
        "requested": _gib(budget.requested_bytes),
        "free_at_startup": _gib(budget.startup.free_bytes + returned_before),
        "starts": "starts" if budget.ok else "fails",
        "weights": _gib(budget.weights_bytes),
        "cuda_graph": _gib(budget.graphs.bytes),
    }
    if summary_consumed:
        planned["consumed"] = _gib(budget.weights_bytes + budget.non_torch_bytes)
        planned["activation"] = _gib(budget.activation_bytes + in_budget_graphs)
    else:
        planned["activation"] = _gib(budget.activation_bytes)
        planned["non_torch"] = _gib(budget.non_torch_bytes)
    if budget.capacity is not None:
        planned["kv_pool"] = _gib(budget.kv_bytes)
        measured = budget.measured
        if measured is not None:  # 0.34+: the profile's figure is the reserved range, the pool comes later
            planned["kv_profiled"] = _gib(measured.reserved_bytes)
            planned["free_after_warmup"] = _gib(measured.free_after_warmup_bytes)
            planned["kept_for_transients"] = _gib(measured.transient_bytes)
        planned["kv_tokens"] = budget.capacity.tokens
        planned["max_concurrency"] = round(budget.capacity.max_concurrency, 2)
        planned["num_gpu_blocks"] = budget.capacity.num_blocks
        geometry = geometry_for(spec)
        if geometry is not None and geometry.has_tokens:
            planned["block_size"] = geometry.block_tokens
    return planned


def _observed_block_size(log: StartupLog, cache: CacheConfigInfo | None, hybrid: bool) -> int | None:
    """The block size the engine runs: what it logged when it raised it for a hybrid model, else what it
    handed back to /metrics (0.33+); the API server's own `block_size` label only for a model that is not
    hybrid, since for a hybrid one that label keeps the default the engine replaced (colo.verify.metrics)."""
    if log.attention_block_size is not None:
        return log.attention_block_size
    if cache is None:
        return None
    if cache.effective_attention_block_size is not None:
        return cache.effective_attention_block_size
    return None if hybrid else cache.block_size


def observed_figures(
    log: StartupLog, cache: CacheConfigInfo | None, *, hybrid: bool = False
) -> dict[str, Value]:
    observed: dict[str, Value | None] = {
        "release": log.vllm_version,
        "weights": log.weights_gib,
        "kv_pool": log.kv_pool_gib,
        "kv_tokens": log.kv_tokens,
        "max_concurrency": log.max_concurrency,
        "cuda_graph": log.graph_gib,
        "num_gpu_blocks": log.num_gpu_blocks,
        "starts": "fails" if log.error is not None else "starts",
        "free_after_warmup": log.measured_kv.free_gib if log.measured_kv is not None else None,
        "kept_for_transients": log.measured_kv.kept_gib if log.measured_kv is not None else None,
        "kv_profiled": log.kv_profiled_gib,
    }
    summary, error = log.summary, log.error
    if summary is not None:
        observed |= {
            "utilization": summary.utilization,
            "requested": summary.requested_gib,
            "free_at_startup": summary.free_gib,
            "consumed": summary.consumed_gib,
            "activation": summary.activation_gib,
            "non_torch": summary.non_torch_gib,
        }
    elif error is not None and error.kind == "free_memory":
        observed |= {
            "utilization": error.utilization,
            "requested": error.requested_gib,
            "free_at_startup": error.free_gib,
        }
    if cache is not None:
        observed["num_gpu_blocks"] = cache.num_gpu_blocks or observed["num_gpu_blocks"]
    observed["block_size"] = _observed_block_size(log, cache, hybrid)
    return {key: value for key, value in observed.items() if value is not None}


def logged_device_gib(log: StartupLog) -> tuple[float, float] | None:
    """The device's total and its free memory at startup as vLLM printed them (its startup summary or its
    free-memory error, which print both), where it printed them."""
    summary, error = log.summary, log.error
    if summary is not None:
        return summary.total_gib, summary.free_gib
    if error is not None and error.total_gib is not None and error.free_gib is not None:
        return error.total_gib, error.free_gib
    return None


def logged_total_gib(log: StartupLog) -> float | None:
    """The device total vLLM printed (its startup summary or its free-memory error), where it printed one."""
    device = logged_device_gib(log)
    return device[0] if device is not None else None


def other_total(budget: ProcessBudget, log: StartupLog) -> float | None:
    """The logged device total where it is not the plan's: the same card reads 79.11 GiB on one driver and
    79.18 on another (its reserved memory differs), and the catalog keeps the lowest seen."""
    total = logged_total_gib(log)
    planned = budget.spec.gpu.cuda_total_bytes / GIB
    return total if total is not None and abs(total - planned) >= 0.01 else None


def _within(term: Term, planned: Value, observed: Value) -> bool:
    if term.key == "release":
        return same_release(str(planned), str(observed))
    if term.tolerance is None or isinstance(planned, str) or isinstance(observed, str):
        return planned == observed
    return term.tolerance.allows(float(planned), float(observed))


def compare(
    budget: ProcessBudget,
    log: StartupLog,
    cache: CacheConfigInfo | None,
    *,
    release: str | None = None,
    returned_before: int = 0,
    device_total: float | None = None,
) -> tuple[TermResult, ...]:
    """Every term both sides state, in vLLM's order (`release`: the one the server runs, where it differs from
    the release whose rules planned it; `returned_before`: as planned_figures takes it; `device_total`: the
    total vLLM logged where it is not the plan's, as other_total gives it, None to hold the plan's)."""
    geometry = geometry_for(budget.spec) if budget.capacity is not None else None
    hybrid = geometry is not None and geometry.has_recurrent_state
    observed = observed_figures(log, cache, hybrid=hybrid)
    planned = planned_figures(
        budget, summary_consumed="consumed" in observed, release=release, returned_before=returned_before
    )
    if device_total is not None:  # vLLM's product on the device it found; the note names the difference
        planned["requested"] = round(device_total * budget.spec.utilization, 2)
    if log.error is not None and not log.error.after_kv_cache:
        # A process that failed before its KV cache was sized never sized what comes after the failure.
        observed.pop("kv_tokens", None)
        observed.pop("max_concurrency", None)
    results = []
    for term in TERMS:
        if term.key in planned and term.key in observed:
            results.append(
                TermResult(
                    term,
                    planned[term.key],
                    observed[term.key],
                    _within(term, planned[term.key], observed[term.key]),
                )
            )
    return tuple(results)


def overall(checks: list[ServerCheck]) -> Verdict:
    """Plan wrong beats unreadable: a term off is a finding even when another server could not be read."""
    verdicts = {check.verdict for check in checks}
    if not checks:
        return Verdict.UNREADABLE
    if Verdict.PLAN_WRONG in verdicts:
        return Verdict.PLAN_WRONG
    return Verdict.UNREADABLE if Verdict.UNREADABLE in verdicts else Verdict.WITHIN
