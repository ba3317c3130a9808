"""A pair's plan as typed figures: the numbers its servers will log at startup, read from the plan itself.

`colo plan --format json` (colo.plan.report) derives its pair view from these figures; the components expose
them as typed outputs. Both read the same plan objects, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import MIB
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.vllm import in_gib


@dataclass(frozen=True)
class ServerFigures:
    """One server as vLLM will size it at startup (its log lines' names), with its flags and probe budget."""

    role: str  # llm, embedding, reranker
    name: str  # <pair>-<role>: its container's Service
    model: str
    image: str
    port: int
    vllm_args: tuple[str, ...]
    gpu_memory_utilization: float
    utilization_derived: bool  # False where the server set gpuMemoryUtilization itself
    weights_gib: float  # "Model loading took"
    kv_cache_gib: float  # "Available KV cache memory"
    kv_tokens: int  # "GPU KV cache size: N tokens" (0 for a server with no KV cache)
    max_concurrency: float  # "Maximum concurrency for N tokens per request"
    max_model_len: int
    footprint_mib: int  # what the process holds once it serves
    startup_probe_seconds: int  # the startup probe's budget, waiting for earlier servers included

    @classmethod
    def of(cls, server: Server) -> ServerFigures:
        budget = server.memory_plan.budget
        capacity = budget.capacity
        return cls(
            role=str(server.role),
            name=server.name,
            model=server.model,
            image=server.image,
            port=server.port,
            vllm_args=tuple(server.args),
            gpu_memory_utilization=budget.spec.utilization,
            utilization_derived=server.memory_plan.utilization_derived,
            weights_gib=in_gib(budget.weights_bytes),
            kv_cache_gib=in_gib(budget.kv_bytes),
            kv_tokens=capacity.tokens if capacity else 0,
            max_concurrency=round(capacity.max_concurrency, 2) if capacity else 0.0,
            max_model_len=budget.spec.limits.max_model_len,
            footprint_mib=round(budget.footprint_bytes / MIB),
            startup_probe_seconds=server.probe.startup_seconds,
        )


@dataclass(frozen=True)
class PairFigures:
    """The pair on its GPU once every server is up."""

    predicted_used_mib: int  # nvidia-smi's memory.used
    predicted_free_mib: int  # what CUDA would still report free
    safety_margin_mib: int  # the free memory the budget keeps
    servers: tuple[ServerFigures, ...]  # in start order; the LLM last

    @classmethod
    def of(cls, pair: PairPlan) -> PairFigures:
        gpu_plan = pair.gpu_plan
        return cls(
            predicted_used_mib=round(gpu_plan.used_bytes / MIB),
            predicted_free_mib=round(gpu_plan.free_bytes / MIB),
            safety_margin_mib=round(gpu_plan.safety_margin_bytes / MIB),
            servers=tuple(ServerFigures.of(server) for server in pair.servers),
        )

    def by_role(self) -> dict[str, ServerFigures]:
        return {server.role: server for server in self.servers}
