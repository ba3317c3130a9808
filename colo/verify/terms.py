"""The terms `colo verify` holds against the plan, in the order vLLM's startup computes them, with tolerances.

The order matters: a term that is off usually drags the later ones along (weights off -> KV pool off ->
tokens off), so the first term off in this order is the one named as the cause. Tolerances are policy,
not fitted to any log: exact where vLLM prints a setting back (the utilization, the block size), tight where
colo reads the figure off vLLM's own arithmetic (requested memory, weights), and looser where colo relies on
measured constants (activation, non-torch growth, CUDA graphs). The KV pool's 5 % sits below the 10 % error
a wrong budget term typically causes and above the spread colo's accuracy check found on real logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unit = Literal["GiB", "tokens", "x", "blocks", "", "release", "state"]


@dataclass(frozen=True)
class Tolerance:
    relative: float = 0.0  # share of the planned value
    absolute: float = 0.0  # in the term's unit

    def allows(self, planned: float, observed: float) -> bool:
        return abs(observed - planned) <= max(self.absolute, self.relative * abs(planned)) + 1e-9

    def describe(self, unit: Unit) -> str:
        parts = []
        if self.relative:
            parts.append(f"{self.relative:.0%}")
        if self.absolute or not self.relative:
            parts.append(f"{self.absolute:g} {unit}".strip())
        return "±" + " or ".join(parts)


@dataclass(frozen=True)
class Term:
    key: str
    label: str  # as vLLM's log line (or metric) names the figure
    unit: Unit
    tolerance: Tolerance | None  # None: must be equal


TERMS: tuple[Term, ...] = (
    Term("release", "vLLM release", "release", None),
    Term("utilization", "gpu_memory_utilization", "", Tolerance(absolute=0.0005)),
    Term("requested", "requested memory (total x utilization)", "GiB", Tolerance(absolute=0.02)),
    Term("free_at_startup", "free memory on device at startup", "GiB", Tolerance(absolute=0.5)),
    Term("starts", "startup", "state", None),
    Term("weights", "Model loading took", "GiB", Tolerance(relative=0.02, absolute=0.05)),
    Term("consumed", "consumed memory (weights + non-torch)", "GiB", Tolerance(relative=0.03, absolute=0.25)),
    Term("activation", "peak activation", "GiB", Tolerance(relative=0.25, absolute=0.25)),
    Term("non_torch", "non-torch memory", "GiB", Tolerance(absolute=0.25)),
    Term("cuda_graph", "CUDA graph memory", "GiB", Tolerance(relative=0.30, absolute=0.25)),
    # vLLM 0.34+ (extensible KV cache): the profile's figure is only the reserved range; the pool is sized after
    # warm-up from "Memory after warmup: F GiB free, ... T GiB kept for transient activations ..."
    Term(
        "kv_profiled",
        "reserved KV range (0.34's Available KV cache memory)",
        "GiB",
        Tolerance(relative=0.05, absolute=0.05),
    ),
    Term("free_after_warmup", "Memory after warmup: free", "GiB", Tolerance(absolute=0.5)),
    Term(
        "kept_for_transients",
        "kept for transient activations",
        "GiB",
        Tolerance(relative=0.25, absolute=0.25),
    ),
    Term(
        "kv_pool",
        "Available KV cache memory",
        "GiB",
        Tolerance(relative=0.05, absolute=0.05),
    ),
    Term("kv_tokens", "GPU KV cache size", "tokens", Tolerance(relative=0.05)),
    Term("max_concurrency", "Maximum concurrency", "x", Tolerance(relative=0.05, absolute=0.01)),
    Term("num_gpu_blocks", "num_gpu_blocks (vllm:cache_config_info)", "blocks", Tolerance(relative=0.05)),
    Term("block_size", "block size (the hybrid one vLLM logs, else vllm:cache_config_info)", "tokens", None),
)
TERM = {term.key: term for term in TERMS}
