"""Plain data views of a plan: the JSON `colo plan --format json` prints and the rows of its tables."""

from __future__ import annotations

from typing import Any

from colo.plan.figures import PairFigures
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.plan.stack import Plan
from colo.vllm import ServerPlan, budget_view, gpu_view, in_gib


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
    }


def pair_view(pair: PairPlan) -> dict[str, Any]:
    figures = PairFigures.of(pair)
    return {
        "name": pair.name,
        "node": pair.placement.node,
        "gpu": pair.placement.gpu,
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
