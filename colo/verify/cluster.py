"""Read each colo server's startup log and /metrics through the Kubernetes API, as kubectl would.

The user's kubeconfig and context are used through the official `kubernetes` client: the pods of each pair's
Deployment (selected by the labels colo gives them), the current pod's log per server container (`previous`
for the run before a crash), the server's /metrics through the API server's service proxy, and the node's
GPU feature discovery labels (GPU product, driver) for a calibration's provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colo.plan.kubernetes_spec import SERVICE_PORT_NAME
from colo.verify.readings import NodeFacts, ServerReading

LOG_LIMIT_BYTES = 16 * 1024 * 1024  # the startup lines come first; a long-running server logs far more
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
DRIVER_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.major")


class ClusterUnreachable(Exception):
    """No kubeconfig, or the API server cannot be reached: nothing can be read."""


@dataclass(frozen=True)
class ServerTarget:
    pair: str
    role: str
    namespace: str
    selector: dict[str, str]  # the labels of the pair's pods
    service: str  # the server's Service, for /metrics


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def _driver(labels: dict[str, str]) -> str | None:
    full = labels.get(DRIVER_LABELS[0])
    if full:
        return full
    parts = [labels.get(f"nvidia.com/cuda.driver.{part}") for part in ("major", "minor", "rev")]
    return ".".join(p for p in parts if p) or None


class ClusterReader:
    """`kubeconfig`: a file (None: KUBECONFIG or ~/.kube/config, as kubectl), or a kubeconfig as data."""

    def __init__(self, kubeconfig: str | dict[str, Any] | None, context: str | None) -> None:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        try:
            if isinstance(kubeconfig, dict):
                api_client = config.new_client_from_config_dict(kubeconfig, context=context)
            else:
                api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
        except (ConfigException, OSError) as exc:
            where = (
                "the stack's cluster"
                if isinstance(kubeconfig, dict)
                else kubeconfig or "KUBECONFIG or ~/.kube/config"
            )
            raise ClusterUnreachable(
                f"no usable kubeconfig ({where}): {exc}; give --kubeconfig/--context, or read logs collected "
                f"elsewhere with --logs DIR"
            ) from None
        self.host = api_client.configuration.host
        self.core = client.CoreV1Api(api_client)
        self._nodes: dict[str, NodeFacts] = {}

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One API call; an unreachable API server ends the run, other failures are the caller's."""
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except HTTPError as exc:
            raise ClusterUnreachable(
                f"cannot reach the Kubernetes API at {self.host} ({what}): {exc}"
            ) from None

    def _current_pod(self, target: ServerTarget) -> Any | None:
        pods = self._call(
            "list pods",
            self.core.list_namespaced_pod,
            target.namespace,
            label_selector=_selector(target.selector),
        ).items
        live = [p for p in pods if p.metadata.deletion_timestamp is None] or pods
        return max(live, key=lambda p: p.metadata.creation_timestamp) if live else None

    def _node(self, name: str | None) -> NodeFacts:
        from kubernetes.client.exceptions import ApiException

        if not name:
            return NodeFacts()
        if name not in self._nodes:
            try:
                labels = self._call("read node", self.core.read_node, name).metadata.labels or {}
            except ApiException:  # reading nodes is often not allowed; provenance then says "unknown"
                labels = {}
            self._nodes[name] = NodeFacts(labels.get(GPU_PRODUCT_LABEL), _driver(labels))
        return self._nodes[name]

    def _metrics(self, target: ServerTarget) -> str | None:
        from kubernetes.client.exceptions import ApiException

        try:
            text = self._call(
                "service proxy",
                self.core.connect_get_namespaced_service_proxy_with_path,
                f"{target.service}:{SERVICE_PORT_NAME}",  # the Service's port has a name, so the proxy needs it
                target.namespace,
                "metrics",
            )
        except ApiException:
            return None
        return str(text)

    def read(self, target: ServerTarget, *, previous: bool) -> ServerReading:
        from kubernetes.client.exceptions import ApiException

        where = f"{target.namespace}/pods?{_selector(target.selector)}"
        pod = self._current_pod(target)
        if pod is None:
            return ServerReading(
                target.pair, target.role, where, unread=f"no pod of pair {target.pair} in {where}"
            )
        name = pod.metadata.name
        source = f"{target.namespace}/{name} container {target.role}" + (
            " (previous run)" if previous else ""
        )
        try:
            log = self._call(
                "read log",
                self.core.read_namespaced_pod_log,
                name,
                target.namespace,
                container=target.role,
                previous=previous,
                limit_bytes=LOG_LIMIT_BYTES,
            )
        except ApiException as exc:
            hint = "" if previous else "; if it crashed, --previous reads the run before"
            return ServerReading(
                target.pair,
                target.role,
                source,
                unread=f"cannot read the log of {source}: {exc.reason}{hint}",
            )
        return ServerReading(
            target.pair,
            target.role,
            source,
            str(log),
            self._metrics(target) if not previous else None,
            node=self._node(pod.spec.node_name if pod.spec else None),
        )
