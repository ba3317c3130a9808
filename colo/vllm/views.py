"""Plain data views of one process's budget and of the GPU it was sized for, named as vLLM's log lines name them."""

from __future__ import annotations

from typing import Any

from colo.catalog import GIB, MIB, GpuSpec
from colo.vllm.process.budget import ProcessBudget


def in_gib(value: int) -> float:
    """A byte count in GiB, as colo prints it: two decimals."""
    return round(value / GIB, 2)


def budget_view(b: ProcessBudget) -> dict[str, Any]:
    """One process's figures, named as vLLM's log lines name them; shared by `colo plan` and `colo estimate`."""
    spec = b.spec
    return {
        "vllm_version": spec.vllm_version,
        "gpu_memory_utilization": spec.utilization,
        "kv_cache_memory_bytes": spec.kv_cache_memory_bytes,
        "requested_gib": in_gib(b.requested_bytes),
        "context_gib": in_gib(b.context_bytes),
        "startup_free_gib": in_gib(b.startup.free_bytes),
        "startup_ok": b.startup.ok,
        "startup_error": b.startup.message or None,
        "weights_gib": in_gib(b.weights_bytes),
        "activation_peak_gib": in_gib(b.activation_bytes),
        "non_torch_gib": in_gib(b.non_torch_bytes),
        "dtype": spec.arch.dtype,
        "tensor_parallel_size": spec.tensor_parallel_size,
        "tp_communication_gib": {
            "before_snapshot": in_gib(b.communication.before_snapshot),
            "in_budget": in_gib(b.communication.in_budget),
        },
        "vision_tower_built": spec.vision_tower_built,
        "mm_encoder_profiled": spec.mm_encoder_profiled,
        "cuda_graph_gib": in_gib(b.graphs.bytes),
        "cuda_graph_estimate_gib": in_gib(b.graphs.estimate_bytes),
        "cuda_graphs": b.graphs.count,
        "cuda_graph_in_budget": b.graph_estimate_in_budget,
        "kv_cache_sizing": b.sizing,
        "kv_cache_gib": in_gib(b.kv_bytes),
        "memory_after_warmup": _after_warmup(b),
        "kv_tokens": b.capacity.tokens if b.capacity else 0,
        "max_concurrency": round(b.capacity.max_concurrency, 2) if b.capacity else 0.0,
        "num_gpu_blocks": b.capacity.num_blocks if b.capacity else 0,
        "max_model_len": spec.limits.max_model_len,
        "max_num_seqs": spec.limits.max_num_seqs,
        "max_num_batched_tokens": spec.limits.max_num_batched_tokens,
        "footprint_mib": round(b.footprint_bytes / MIB),
        "errors": list(b.errors),
        "calibration": spec.calibration.view() if spec.calibration else None,
    }


def _after_warmup(b: ProcessBudget) -> dict[str, Any] | None:
    """The figures of 0.34's "Memory after warmup" line, where the pool is sized after warm-up."""
    m = b.measured
    if m is None:
        return None
    return {
        "available_kv_cache_gib": in_gib(m.reserved_bytes),  # the profile's figure: the reserved range
        "free_gib": in_gib(m.free_after_warmup_bytes),
        "kept_for_transients_gib": in_gib(m.transient_bytes),
        "margin_gib": in_gib(m.margin_bytes),
        "sized_from": m.bound,
        "kv_cache_blocks": b.capacity.num_blocks if b.capacity else 0,
    }


def gpu_view(gpu: GpuSpec) -> dict[str, Any]:
    """The GPU the budget used, with whatever colo had to assume about it."""
    return {
        "name": gpu.name,
        "device_name": gpu.device_name or None,
        "cuda_total_gib": in_gib(gpu.cuda_total_bytes),
        "context_mib": round(gpu.context_bytes / MIB),
        "in_catalog": gpu.from_catalog,
        "assumptions": list(gpu.assumptions),
    }
