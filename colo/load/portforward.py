"""Reach a pair's pod through the Kubernetes API's port-forward, as `kubectl port-forward` does.

Why port-forward and not a Job in the cluster: the probe creates nothing there (no Job, no image to pull, no
NetworkPolicy exception for a load generator), so nothing can be left running when it ends or is killed, and it
needs only the `pods/portforward` permission the user already uses. Port-forwarded traffic enters the pod's own
network namespace on loopback, past the pair's NetworkPolicy. Its cost: every request crosses the API server and
the kubelet, which adds their round trip to each time to first token and can bunch streamed chunks; the probe
measures the LLM alone through the same path, so the difference alone/beside is the companions', and the report
says so.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from colo.verify.cluster import ClusterUnreachable


@dataclass
class PortForwards:
    """Opens one port-forward per connection to the pod, and closes every one it opened."""

    core: Any  # kubernetes.client.CoreV1Api
    namespace: str
    pod: str
    opened: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def connect(self, port: int) -> socket.socket:
        from kubernetes.stream import portforward

        forward = portforward(
            self.core.connect_get_namespaced_pod_portforward, self.pod, self.namespace, ports=str(port)
        )
        with self.lock:
            self.opened.append(forward)
        connected: socket.socket = forward.socket(port)
        return connected

    def close(self) -> None:
        with self.lock:
            forwards, self.opened = self.opened, []
        for forward in forwards:
            with contextlib.suppress(Exception):  # a tunnel that already died is closed
                forward.close()


def pair_pod(core: Any, namespace: str, selector: dict[str, str]) -> str:
    """The pair's running pod, newest first; the probe runs against one pod only."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    labels = ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
    try:
        pods = core.list_namespaced_pod(namespace, label_selector=labels).items
    except (ApiException, HTTPError) as exc:
        raise ClusterUnreachable(f"cannot list the pods of {namespace}/{labels}: {exc}") from None
    running = [p for p in pods if p.status is not None and p.status.phase == "Running"]
    if not running:
        raise ClusterUnreachable(f"no running pod in {namespace} with {labels}: deploy the pair first")
    return str(max(running, key=lambda p: p.metadata.creation_timestamp).metadata.name)


def core_api(kubeconfig: str | None, context: str | None) -> Any:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    except (ConfigException, OSError) as exc:
        raise ClusterUnreachable(
            f"no usable kubeconfig ({kubeconfig or 'KUBECONFIG or ~/.kube/config'}): {exc}; give --kubeconfig/"
            f"--context, or run your own port-forward and use --loopback"
        ) from None
    return client.CoreV1Api(api_client)
