"""Reading what the scheduler and the controllers did with colo's pods, and probe pods that ask for one GPU more."""

from __future__ import annotations

from typing import Any

from tests.control_plane.api import Api, wait_until
from tests.control_plane.nodes import DRA_DRIVER
from tests.control_plane.stacks import StackOnCluster

RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def pair_pods(api: Api, stack: StackOnCluster) -> dict[str, list[dict[str, Any]]]:
    """The live (not terminating) pods of each pair's Deployment, by pair."""
    found: dict[str, list[dict[str, Any]]] = {}
    for deployment in stack.of_kind("Deployment"):
        labels = deployment["spec"]["selector"]["matchLabels"]
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        pods = api.list("v1", "Pod", deployment["metadata"]["namespace"], label_selector=selector)
        found[deployment["metadata"]["name"]] = [
            p for p in pods if not p["metadata"].get("deletionTimestamp")
        ]
    return found


def scheduled_node(pod: dict[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


def wait_for_pair_pods(
    api: Api, stack: StackOnCluster, within: float = 90
) -> dict[str, list[dict[str, Any]]]:
    def settled() -> dict[str, list[dict[str, Any]]] | None:
        pods = pair_pods(api, stack)
        return pods if all(len(p) == 1 and scheduled_node(p[0]) for p in pods.values()) else None

    return wait_until(settled, within, "one scheduled pod per pair")


def pending_reason(api: Api, namespace: str, name: str) -> str | None:
    """The scheduler's message when it could not place the pod (PodScheduled False, Unschedulable)."""
    pod = api.core.read_namespaced_pod(name, namespace)
    for condition in pod.status.conditions or []:
        if (
            condition.type == "PodScheduled"
            and condition.status == "False"
            and condition.reason == "Unschedulable"
        ):
            return str(condition.message)
    return None


def available(api: Api, namespace: str, name: str) -> bool:
    status = api.apps.read_namespaced_deployment(name, namespace).status
    return any(c.type == "Available" and c.status == "True" for c in status.conditions or [])


def probe_pod(
    name: str, namespace: str, deployment: dict[str, Any], resource: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A pod on the pair's nodes (same selector and tolerations) asking for one `resource`, or for one GPU of the
    DRA driver when `resource` is "dra" (then with its own ResourceClaim, returned second)."""
    template = deployment["spec"]["template"]["spec"]
    container: dict[str, Any] = {
        "name": "probe",
        "image": "registry.k8s.io/pause:3.10",
        "securityContext": RESTRICTED_CONTAINER,
        "resources": {"limits": {}, "requests": {}},
    }
    extra: list[dict[str, Any]] = []
    spec: dict[str, Any] = {
        "nodeSelector": template["nodeSelector"],
        "tolerations": template["tolerations"],
        "containers": [container],
    }
    if resource == "dra":
        claim = f"{name}-gpu"
        extra.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": claim, "namespace": namespace},
                "spec": {
                    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRA_DRIVER}}]}
                },
            }
        )
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    else:
        container["resources"] = {"limits": {resource: "1"}, "requests": {resource: "1"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return pod, extra


class Probes:
    """Probe pods made during one test, deleted (and waited for) when it ends, so their GPUs are free again."""

    def __init__(self, api: Api, stack: StackOnCluster) -> None:
        self.api, self.stack = api, stack
        self.made: list[dict[str, Any]] = []

    def fits(self, resource: str, name: str = "probe") -> bool:
        """Whether the scheduler binds a pod asking for one more `resource` to the stack's nodes; the probe
        stays until the test ends, so a second probe finds the first one's GPU taken."""
        (deployment, *_) = self.stack.of_kind("Deployment")
        namespace = deployment["metadata"]["namespace"]
        pod, extra = probe_pod(name, namespace, deployment, resource)
        for obj in (*extra, pod):
            self.api.apply(obj)
            self.made.append(obj)

        def decided() -> str | None:
            return "bound" if scheduled_node(self.api.get(pod)) else pending_reason(self.api, namespace, name)

        return wait_until(decided, 30, f"the scheduler to decide on {name}") == "bound"

    def remove(self) -> None:
        for obj in reversed(self.made):
            self.api.delete(obj)
        wait_until(lambda: not any(self.api.exists(o) for o in self.made), 60, "the probes to go")
