"""Watching the servers: Prometheus scraping, the alert rules and the Grafana dashboard of one stack.

With the Prometheus operator (`observability.prometheusOperator`) a PodMonitor scrapes every server port of
the pair pods and a PrometheusRule holds the alerts. Without it the pair pods carry the conventional
`prometheus.io/scrape` annotations, with no port: Prometheus's pod discovery then makes one target per
declared container port, i.e. per server (the annotation can name only one port, and a pair pod has two or
three servers). Alerts need the operator's CRD and are not declared without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.alert_rules import rule_groups
from colo.components.contract import renamed, token
from colo.components.grafana_dashboard import SIDECAR_LABEL, dashboard_json
from colo.plan.monitoring import MonitoringSpec
from colo.roles import start_position

MONITORING_API = "monitoring.coreos.com/v1"
METRICS_PATH = "/metrics"


def scrape_annotations(spec: MonitoringSpec) -> dict[str, str] | None:
    """Pod annotations for a Prometheus that discovers pods by annotation; None under the operator."""
    if spec.prometheus_operator:
        return None
    return {"prometheus.io/scrape": "true", "prometheus.io/path": METRICS_PATH}


def server_ports(spec: MonitoringSpec) -> list[str]:
    """The named container ports of every server (each is named after its role)."""
    return sorted({s.role for pair in spec.pairs for s in pair.servers}, key=start_position)


@dataclass(frozen=True)
class ServerMonitoringArgs:
    spec: MonitoringSpec
    instance: str  # the stack's cluster name
    namespace: pulumi.Input[str]  # the servers'
    namespace_name: str  # the same, as plain text for queries
    pod_selector: dict[str, str]  # every pair pod of the stack
    labels: dict[str, str]


class ServerMonitoring(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: ServerMonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(token("ServerMonitoring"), name, None, renamed("ServerMonitoring", opts))
        self._args = args
        spec = args.spec
        if spec.prometheus_operator:
            self._pod_monitor(name)
            self._rules(name)
        if spec.dashboard_namespace is not None:
            self._dashboard(name, spec.dashboard_namespace)
        self.register_outputs({})

    def _metadata(
        self, name: str, namespace: pulumi.Input[str], extra: dict[str, str]
    ) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(
            name=name, namespace=namespace, labels={**self._args.labels, **extra}
        )

    def _pod_monitor(self, name: str) -> None:
        args = self._args
        k8s.apiextensions.CustomResource(
            f"{name}-pods",
            api_version=MONITORING_API,
            kind="PodMonitor",
            metadata=self._metadata(f"{args.instance}-vllm", args.namespace, args.spec.monitor_labels),
            spec={
                "selector": {"matchLabels": args.pod_selector},
                "podMetricsEndpoints": [
                    {"port": port, "path": METRICS_PATH} for port in server_ports(args.spec)
                ],
            },
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _rules(self, name: str) -> None:
        args = self._args
        k8s.apiextensions.CustomResource(
            f"{name}-alerts",
            api_version=MONITORING_API,
            kind="PrometheusRule",
            metadata=self._metadata(f"{args.instance}-alerts", args.namespace, args.spec.monitor_labels),
            spec={"groups": rule_groups(args.spec, args.instance, args.namespace_name)},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _dashboard(self, name: str, namespace: str) -> None:
        args = self._args
        k8s.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata=self._metadata(f"{args.instance}-dashboard", namespace, SIDECAR_LABEL),
            data={f"{args.instance}.json": dashboard_json(args.spec, args.instance, args.namespace_name)},
            opts=pulumi.ResourceOptions(parent=self),
        )
