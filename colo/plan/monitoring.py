"""What colo declares to watch the servers, decided from the stack's `observability` and the plan.

Pure data for colo.components.monitoring: which scrape mechanism, whether colo runs NVIDIA's DCGM exporter,
where the dashboard goes, and per pair the figures the dashboard and alerts hold the GPU against (the plan's
predicted nvidia-smi used and the safety margin).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from colo.config.schema import StackConfig
from colo.errors import Problem
from colo.plan.pair import PairPlan
from colo.plan.scheduling import DevicePluginPlan

SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # what time-slicing advertises (colo.components.device_plugin)


@dataclass(frozen=True)
class ServerMetrics:
    name: str  # <pair>-<role>
    role: str  # also the container port's name
    port: int
    served_model: str  # vLLM's model_name label


@dataclass(frozen=True)
class PairMetrics:
    name: str
    predicted_used_mib: int  # the plan's nvidia-smi "used" for the pair's GPU
    safety_margin_mib: int
    servers: tuple[ServerMetrics, ...]


@dataclass(frozen=True)
class DcgmExporterPlan:
    namespace: str  # the device plugin's (privileged) namespace: the exporter reads kubelet's pod-resources
    node_selector: dict[str, str]
    # Device-plugin resources besides nvidia.com/gpu that pods request, so GPU metrics carry their pods.
    resource_names: tuple[str, ...]


@dataclass(frozen=True)
class MonitoringSpec:
    prometheus_operator: bool
    monitor_labels: dict[str, str]
    dashboard_namespace: str | None  # None: no dashboard
    dcgm_exporter: DcgmExporterPlan | None
    pairs: tuple[PairMetrics, ...]


def _dcgm(config: StackConfig, plugin: DevicePluginPlan | None) -> DcgmExporterPlan | None:
    if not config.observability.dcgm_exporter or plugin is None:
        return None
    shared = (SHARED_GPU_RESOURCE,) if plugin.time_slices is not None else ()
    return DcgmExporterPlan(plugin.namespace, dict(plugin.node_selector), shared)


def monitoring_spec(
    config: StackConfig, pairs: Sequence[PairPlan], device_plugin: DevicePluginPlan | None
) -> MonitoringSpec:
    observability = config.observability
    dashboard = observability.dashboard_namespace or config.cluster.namespace
    return MonitoringSpec(
        prometheus_operator=observability.prometheus_operator,
        monitor_labels=dict(observability.monitor_labels),
        dashboard_namespace=dashboard if observability.grafana_dashboard else None,
        dcgm_exporter=_dcgm(config, device_plugin),
        pairs=tuple(
            PairMetrics(
                pair.name,
                round(pair.gpu_plan.used_bytes / 2**20),
                round(pair.gpu_plan.safety_margin_bytes / 2**20),
                tuple(ServerMetrics(s.name, s.role, s.port, s.model) for s in pair.servers),
            )
            for pair in pairs
        ),
    )


def scrape_warnings(config: StackConfig) -> list[Problem]:
    """A Prometheus the NetworkPolicies would keep out: said, since only the user knows where it runs."""
    observability = config.observability
    if config.network.scrape_from or not (observability.prometheus_operator or observability.dcgm_exporter):
        return []
    return [
        Problem(
            "colo:network.scrapeFrom",
            "is empty, so Prometheus reaches the servers' /metrics only from the namespaces the NetworkPolicies "
            "admit anyway (the servers' own, network.allowFrom) and the DCGM exporter's not at all; add where "
            "Prometheus runs, e.g. scrapeFrom: [{namespace: monitoring}]",
        )
    ]


def observability_warnings(config: StackConfig, plugin: DevicePluginPlan | None) -> list[Problem]:
    """dcgmExporter asked for where colo does not manage the device plugin: said, not refused."""
    if not config.observability.dcgm_exporter or plugin is not None:
        return []
    why = (
        "the GPU operator deploys its own DCGM exporter"
        if config.cluster.node_image == "gpu-operator-cdi"
        else "colo does not install the device plugin here (DRA, or the node image brings it); deploy NVIDIA's "
        "dcgm-exporter chart alongside it"
    )
    return [Problem("colo:observability.dcgmExporter", f"skipped: {why}")]
