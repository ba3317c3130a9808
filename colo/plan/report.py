"""Plain data views of a plan: the JSON `colo plan --format json` prints and the rows of its tables."""

from __future__ import annotations

from typing import Any

from colo.catalog import GIB, MIB, GpuSpec
from colo.plan.budget import ProcessBudget
from colo.plan.colocate import ServerPlan
from colo.plan.pair import PairPlan, Server
from colo.plan.stack import Plan


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def budget_view(b: ProcessBudget) -> dict[str, Any]:
    """One process's figures, named as vLLM's log lines name them; shared by `colo plan` and `colo estimate`."""
    spec = b.spec
    return {
        "vllm_version": spec.vllm_version,
        "gpu_memory_utilization": spec.utilization,
        "kv_cache_memory_bytes": spec.kv_cache_memory_bytes,
        "requested_gib": _gib(b.requested_bytes),
        "context_gib": _gib(b.context_bytes),
        "startup_free_gib": _gib(b.startup.free_bytes),
        "startup_ok": b.startup.ok,
        "startup_error": b.startup.message or None,
        "weights_gib": _gib(b.weights_bytes),
        "activation_peak_gib": _gib(b.activation_bytes),
        "non_torch_gib": _gib(b.non_torch_bytes),
        "tensor_parallel_size": spec.tensor_parallel_size,
        "tp_communication_gib": {
            "before_snapshot": _gib(b.communication.before_snapshot),
            "in_budget": _gib(b.communication.in_budget),
        },
        "vision_tower_built": spec.vision_tower_built,
        "mm_encoder_profiled": spec.mm_encoder_profiled,
        "cuda_graph_gib": _gib(b.graphs.bytes),
        "cuda_graphs": b.graphs.count,
        "cuda_graph_in_budget": b.graph_estimate_in_budget,
        "kv_cache_gib": _gib(b.kv_bytes),
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


def gpu_view(gpu: GpuSpec) -> dict[str, Any]:
    """The GPU the budget used, with whatever colo had to assume about it."""
    return {
        "name": gpu.name,
        "device_name": gpu.device_name or None,
        "cuda_total_gib": _gib(gpu.cuda_total_bytes),
        "context_mib": round(gpu.context_bytes / MIB),
        "in_catalog": gpu.from_catalog,
        "assumptions": list(gpu.assumptions),
    }


def memory_view(plan: ServerPlan) -> dict[str, Any]:
    return {
        **budget_view(plan.budget),
        "utilization_derived": plan.utilization_derived,
        "graph_decision": plan.graph_decision,
        "notes": list(plan.notes),
    }


def server_view(server: Server) -> dict[str, Any]:
    return {
        "role": server.role,
        "name": server.name,
        "model": server.model,
        "image": server.image,
        "port": server.port,
        "memory": memory_view(server.memory_plan),
        "startup_probe_seconds": server.probe.startup_seconds,
        "startup_probe_breakdown": server.probe.breakdown,
        "vllm_args": list(server.args),
    }


def pair_view(pair: PairPlan) -> dict[str, Any]:
    gpu_plan = pair.gpu_plan
    return {
        "name": pair.name,
        "node": pair.placement.node,
        "gpu": pair.placement.gpu,
        "feasible": pair.feasible,
        "predicted_used_mib": round(gpu_plan.used_bytes / MIB),
        "predicted_free_mib": round(gpu_plan.free_bytes / MIB),
        "safety_margin_mib": round(gpu_plan.safety_margin_bytes / MIB),
        "startup_checks": [
            {
                "server": s.name,
                "free_gib": _gib(s.memory_plan.budget.startup.free_bytes),
                "requested_gib": _gib(s.memory_plan.budget.startup.requested_bytes),
                "ok": s.memory_plan.budget.startup.ok,
            }
            for s in pair.servers
        ],
        "servers": [server_view(s) for s in pair.servers],
    }


def plan_view(plan: Plan) -> dict[str, Any]:
    return {
        "feasible": plan.feasible,
        "gpu": gpu_view(plan.gpu),
        "node_pool": {
            "mode": plan.config.node_pool.mode,
            "instance_type": plan.config.node_pool.instance_type,
            "gpus_per_node": plan.gpus_per_node,
            "node_count": plan.node_count,
            "spare_gpus": plan.config.node_pool.spare_gpus,
        },
        "gpu_pairing": plan.config.cluster.gpu_pairing,
        "ordered_start": "native sidecar" if plan.native_sidecars else "health wait",
        "pairs": [pair_view(p) for p in plan.pairs],
        "problems": [{"path": p.path, "message": p.message} for p in plan.problems],
        "warnings": [{"path": p.path, "message": p.message} for p in plan.warnings],
    }
