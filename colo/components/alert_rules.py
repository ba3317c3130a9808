"""The alerts of one stack, as Prometheus rule groups (the spec of a PrometheusRule).

- KV cache usage above 90 % for 10 minutes: requests are about to queue or be preempted;
- preemptions: vLLM evicted running requests for lack of KV blocks;
- a server container restarted: an OOM kill or a failed startup or liveness probe (`colo verify --previous`
  reads the run that ended);
- GPU memory above the plan's predicted nvidia-smi used by more than the safety margin, per pair: the
  budget was wrong, or something else holds memory on the pair's GPU (needs a DCGM exporter).
"""

from __future__ import annotations

from typing import Any

from colo.components.vllm_metrics import (
    CONTAINER_RESTARTS,
    GPU_MEMORY_USED_MIB,
    KV_CACHE_USAGE,
    PREEMPTIONS,
    SERVER_LABELS,
    in_namespace,
    pair_pods,
)
from colo.plan.monitoring import MonitoringSpec

KV_FULL_SHARE, KV_FULL_FOR = 0.9, "10m"


def _server_rules(namespace: str, roles: str) -> list[dict[str, Any]]:
    return [
        {
            "alert": "ColoKvCacheNearlyFull",
            "expr": f"max by ({SERVER_LABELS}) ({in_namespace(KV_CACHE_USAGE, namespace)}) > {KV_FULL_SHARE}",
            "for": KV_FULL_FOR,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "vLLM KV cache above 90 % for 10 minutes",
                "description": "{{ $labels.pod }} ({{ $labels.model_name }}) holds more than 90 % of its KV "
                "cache: new requests queue and running ones may be preempted.",
            },
        },
        {
            "alert": "ColoPreemptions",
            "expr": f"sum by ({SERVER_LABELS}) (increase({in_namespace(PREEMPTIONS, namespace)}[10m])) > 0",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "vLLM preempted requests",
                "description": "{{ $labels.pod }} ({{ $labels.model_name }}) preempted {{ $value }} requests in "
                "10 minutes for lack of KV cache blocks.",
            },
        },
        {
            "alert": "ColoServerRestarted",
            "expr": f"increase({in_namespace(CONTAINER_RESTARTS, namespace, container=roles)}[15m]) > 0",
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "a vLLM server container restarted",
                "description": "{{ $labels.container }} in {{ $labels.pod }} restarted (OOM kill, or a failed "
                "startup or liveness probe); `colo verify --previous` reads the run that ended.",
            },
        },
    ]


def _gpu_memory_rules(spec: MonitoringSpec, namespace: str) -> list[dict[str, Any]]:
    rules = []
    for pair in spec.pairs:
        limit = pair.predicted_used_mib + pair.safety_margin_mib
        used = in_namespace(GPU_MEMORY_USED_MIB, namespace, pod=pair_pods(pair.name))
        rules.append(
            {
                "alert": "ColoGpuMemoryAbovePlan",
                "expr": f"max by (UUID, gpu) ({used}) > {limit}",
                "for": "5m",
                "labels": {"severity": "warning", "pair": pair.name},
                "annotations": {
                    "summary": f"pair {pair.name}: GPU memory above the plan",
                    "description": f"GPU {{{{ $labels.UUID }}}} of pair {pair.name} uses {{{{ $value }}}} MiB; "
                    f"the plan predicted {pair.predicted_used_mib} MiB with a safety margin of "
                    f"{pair.safety_margin_mib} MiB. Run `colo verify` to see which term was off.",
                },
            }
        )
    return rules


def rule_groups(spec: MonitoringSpec, instance: str, namespace: str) -> list[dict[str, Any]]:
    roles = "|".join(sorted({server.role for pair in spec.pairs for server in pair.servers}))
    return [
        {"name": f"{instance}-vllm", "rules": _server_rules(namespace, roles)},
        {"name": f"{instance}-gpu-memory", "rules": _gpu_memory_rules(spec, namespace)},
    ]
