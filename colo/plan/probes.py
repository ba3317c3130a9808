"""Startup probe budgets from bytes and throughput, instead of guessed initial delays.

A server is given time to read its weights from the model volume (or download them on first start),
build the engine and profile memory, compile and capture CUDA graphs; then a margin. Readiness and liveness
probes start only after the startup probe passed, so they need no initial delay at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from colo.catalog import MIB
from colo.vllm import ProcessBudget

PERIOD_S = 10
ENGINE_INIT_S = 45  # process start, tokenizer, engine core, memory profiling (public logs: 20-60 s)
COMPILE_S = 90  # torch.compile of a cold cache (public logs: Dynamo 15 s + compile 30-75 s)
CAPTURE_S_PER_GRAPH = 0.5  # "Graph capturing finished in 20 secs" for ~50-90 graphs in public logs
MARGIN_FACTOR = 1.5
IMAGE_PULL_S = 600  # a cold pull of a vllm-openai image (~10 GB compressed) on a fresh node


@dataclass(frozen=True)
class ProbeBudget:
    startup_seconds: int
    period_seconds: int
    failure_threshold: int
    breakdown: dict[str, float]
    own_seconds: int  # this server's own start, margin included, without waiting for earlier servers


def startup_budget(
    budget: ProcessBudget,
    *,
    read_mib_per_s: float,
    download_mib_per_s: float | None,
    waits_for_s: float = 0.0,
) -> ProbeBudget:
    # a tensor-parallel LLM's ranks each load their share, together the whole checkpoint, from one volume
    weights_mib = budget.weights_bytes * budget.spec.tensor_parallel_size / MIB
    parts = {
        "read_weights": weights_mib / read_mib_per_s,
        "download_weights": weights_mib / download_mib_per_s if download_mib_per_s else 0.0,
        "engine_init": float(ENGINE_INIT_S),
        "compile": 0.0 if budget.spec.enforce_eager else float(COMPILE_S),
        "capture_graphs": budget.graphs.count * CAPTURE_S_PER_GRAPH,
    }
    own = sum(parts.values()) * MARGIN_FACTOR
    # Earlier servers' budgets already carry their own margin: the wait is added, not multiplied.
    threshold = max(3, ceil((own + waits_for_s) / PERIOD_S))
    breakdown = {k: round(v, 1) for k, v in {**parts, "wait_for_earlier_servers": waits_for_s}.items()}
    return ProbeBudget(threshold * PERIOD_S, PERIOD_S, threshold, breakdown, ceil(own))
