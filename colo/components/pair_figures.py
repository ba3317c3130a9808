"""A pair's plan as typed figures: what `colo plan --format json` shows for it, read from the same view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colo.plan.pair import PairPlan
from colo.plan.report import pair_view


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
    def of(cls, view: dict[str, Any]) -> ServerFigures:
        memory = view["memory"]
        return cls(
            role=str(view["role"]),
            name=view["name"],
            model=view["model"],
            image=view["image"],
            port=view["port"],
            vllm_args=tuple(view["vllm_args"]),
            gpu_memory_utilization=memory["gpu_memory_utilization"],
            utilization_derived=memory["utilization_derived"],
            weights_gib=memory["weights_gib"],
            kv_cache_gib=memory["kv_cache_gib"],
            kv_tokens=memory["kv_tokens"],
            max_concurrency=memory["max_concurrency"],
            max_model_len=memory["max_model_len"],
            footprint_mib=memory["footprint_mib"],
            startup_probe_seconds=view["startup_probe_seconds"],
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
        view = pair_view(pair)
        return cls(
            predicted_used_mib=view["predicted_used_mib"],
            predicted_free_mib=view["predicted_free_mib"],
            safety_margin_mib=view["safety_margin_mib"],
            servers=tuple(ServerFigures.of(server) for server in view["servers"]),
        )

    def by_role(self) -> dict[str, ServerFigures]:
        return {server.role: server for server in self.servers}
