"""One Grafana dashboard per stack, as the JSON Grafana's dashboard sidecar loads from a ConfigMap.

Per server: KV cache usage, running and waiting requests, preemptions, TTFT and TPOT (p95). Per GPU: memory
used (DCGM) beside each pair's predicted nvidia-smi used and that plus the safety margin, drawn as constant
series from the plan so a drift shows at a glance.
"""

from __future__ import annotations

import json
from typing import Any

from colo.components.vllm_metrics import (
    GPU_MEMORY_USED_MIB,
    KV_CACHE_USAGE,
    PREEMPTIONS,
    REQUESTS_RUNNING,
    REQUESTS_WAITING,
    TTFT_BUCKETS,
    in_namespace,
    pair_pods,
    quantile,
    tpot_rate,
)
from colo.plan.monitoring import MonitoringSpec

SIDECAR_LABEL = {"grafana_dashboard": "1"}  # what kube-prometheus-stack's Grafana sidecar watches by default
SERVER_LEGEND = "{{pod}} {{model_name}}"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _panel(index: int, title: str, unit: str, targets: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend, "datasource": DATASOURCE}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def _gpu_memory_targets(spec: MonitoringSpec, namespace: str) -> list[tuple[str, str]]:
    targets = []
    for pair in spec.pairs:
        used = in_namespace(GPU_MEMORY_USED_MIB, namespace, pod=pair_pods(pair.name))
        targets += [
            (f"max by (UUID, gpu) ({used})", f"{pair.name} used (GPU {{{{gpu}}}})"),
            (f"vector({pair.predicted_used_mib})", f"{pair.name} planned nvidia-smi used"),
            (
                f"vector({pair.predicted_used_mib + pair.safety_margin_mib})",
                f"{pair.name} planned + safety margin",
            ),
        ]
    return targets


def dashboard(spec: MonitoringSpec, instance: str, namespace: str) -> dict[str, Any]:
    panels = [
        ("KV cache usage", "percentunit", [(in_namespace(KV_CACHE_USAGE, namespace), SERVER_LEGEND)]),
        (
            "Requests running / waiting",
            "short",
            [
                (in_namespace(REQUESTS_RUNNING, namespace), f"running {SERVER_LEGEND}"),
                (in_namespace(REQUESTS_WAITING, namespace), f"waiting {SERVER_LEGEND}"),
            ],
        ),
        (
            "Preemptions per second",
            "short",
            [(f"rate({in_namespace(PREEMPTIONS, namespace)}[5m])", SERVER_LEGEND)],
        ),
        (
            "Time to first token (p95)",
            "s",
            [(quantile(0.95, f"rate({in_namespace(TTFT_BUCKETS, namespace)}[5m])"), SERVER_LEGEND)],
        ),
        ("Time per output token (p95)", "s", [(quantile(0.95, tpot_rate(namespace)), SERVER_LEGEND)]),
        ("GPU memory used vs plan (MiB)", "decmbytes", _gpu_memory_targets(spec, namespace)),
    ]
    return {
        "uid": f"colo-{instance}"[:40],
        "title": f"colo {instance}",
        "tags": ["colo", "vllm"],
        "schemaVersion": 39,
        "editable": False,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}
            ]
        },
        "panels": [_panel(i, title, unit, targets) for i, (title, unit, targets) in enumerate(panels)],
    }


def dashboard_json(spec: MonitoringSpec, instance: str, namespace: str) -> str:
    return json.dumps(dashboard(spec, instance, namespace), indent=2, sort_keys=True)
