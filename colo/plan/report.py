"""Plain data views of a plan: the JSON `colo plan --format json` prints and the rows of its tables."""

from __future__ import annotations

from typing import Any

from colo.catalog import MIB
from colo.plan.capacity import capacity_view
from colo.plan.compute_sharing import sharing_view
from colo.plan.figures import PairFigures
from colo.plan.pair import PairPlan
from colo.plan.platform import instance_type_known
from colo.plan.server import Server
from colo.plan.stack import Plan
from colo.vllm import GroupPlan, ServerPlan, budget_view, gpu_view, in_gib


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
        "model_source": {
            "kind": server.source.kind,
            "repo_id": server.source.repo_id,
            "revision": server.source.revision,
            "commit": server.source.commit,
            "notes": list(server.source.notes),
        },
        "image": server.image,
        "port": server.port,
        "memory": memory_view(server.memory_plan),
        "startup_probe_seconds": server.probe.startup_seconds,
        "startup_probe_breakdown": server.probe.breakdown,
        "vllm_args": list(server.args),
        "compile_cache": None
        if server.compile_cache is None
        else {"sub_path": server.compile_cache.sub_path, "where": server.compile_cache.where},
    }


def group_view(pair: PairPlan, group: GroupPlan) -> dict[str, Any]:
    """Every GPU of a tensor-parallel LLM's group: its servers in start order (the LLM's rank last), its figures."""
    names = [s.name for s in pair.servers]
    llm = pair.llm.name

    def on_gpu(k: int) -> list[str]:
        return [n for n, g in zip(names, group.companion_gpus, strict=False) if g == k] + [f"{llm} rank {k}"]

    return {
        "tensor_parallel_size": group.tensor_parallel_size,
        "binding_gpu": group.binding,
        "notes": list(group.notes),
        "gpus": [
            {
                "gpu": k,
                "node_gpu": pair.placement.gpu + k,
                "predicted_used_mib": round(plan.used_bytes / MIB),
                "predicted_free_mib": round(plan.free_bytes / MIB),
                "idle_mib": round(group.idle_bytes[k] / MIB),
                "servers": [
                    {
                        "name": name,
                        "role": server.role,
                        "gpu_memory_utilization": server.utilization,
                        "footprint_mib": round(server.budget.footprint_bytes / MIB),
                        "startup_free_gib": in_gib(server.budget.startup.free_bytes),
                        "requested_gib": in_gib(server.budget.startup.requested_bytes),
                        "startup_ok": server.budget.startup.ok,
                        "kv_cache_gib": in_gib(server.budget.kv_bytes),
                        "num_gpu_blocks": server.budget.capacity.num_blocks if server.budget.capacity else 0,
                    }
                    for name, server in zip(on_gpu(k), plan.servers, strict=True)
                ],
            }
            for k, plan in enumerate(group.gpus)
        ],
    }


def pair_view(pair: PairPlan) -> dict[str, Any]:
    figures = PairFigures.of(pair)
    return {
        "name": pair.name,
        "node": pair.placement.node,
        "gpu": pair.placement.gpu,
        "gpus": list(pair.placement.gpu_indices),
        "group": group_view(pair, pair.group) if pair.group else None,
        "feasible": pair.feasible,
        "predicted_used_mib": figures.predicted_used_mib,
        "predicted_free_mib": figures.predicted_free_mib,
        "safety_margin_mib": figures.safety_margin_mib,
        "startup_checks": [
            {
                "server": s.name,
                "free_gib": in_gib(s.memory_plan.budget.startup.free_bytes),
                "requested_gib": in_gib(s.memory_plan.budget.startup.requested_bytes),
                "ok": s.memory_plan.budget.startup.ok,
            }
            for s in pair.servers
        ],
        "servers": [server_view(s) for s in pair.servers],
        "compute_sharing": sharing_view(pair.sharing) if pair.sharing else None,
    }


def plan_view(plan: Plan) -> dict[str, Any]:
    return {
        "feasible": plan.feasible,
        "gpu": gpu_view(plan.gpu),
        "node_pool": {
            "mode": plan.config.node_pool.mode,
            # None where the user named none (an existing pool, Karpenter, Auto Mode): the schema's default is
            # not what those nodes are
            "instance_type": plan.config.node_pool.instance_type
            if instance_type_known(plan.config)
            else None,
            "gpus_per_node": plan.gpus_per_node,
            "node_count": plan.node_count,
            "spare_gpus": plan.config.node_pool.spare_gpus,
            "capacity": capacity_view(plan),
        },
        "gpu_pairing": plan.config.cluster.gpu_pairing,
        "ordered_start": "native sidecar" if plan.native_sidecars else "health wait",
        "pairs": [pair_view(p) for p in plan.pairs],
        "problems": [{"path": p.path, "message": p.message} for p in plan.problems],
        "warnings": [{"path": p.path, "message": p.message} for p in plan.warnings],
    }
