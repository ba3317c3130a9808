"""`colo preflight`, through the Kubernetes API, for nodePool.mode karpenter and auto: the CRDs colo's objects need
are installed and serve v1, and EKS Auto Mode's NodeClass exists with disk for the plan's images and weights.

The user's kubeconfig and context are read through the official `kubernetes` client, as `colo verify` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from colo.aws.preflight import Check
from colo.catalog import GIB
from colo.plan.capacity import AUTO_MODE_DEFAULT_STORAGE_GIB, AUTO_NODE_CLASS_GROUP, CapacitySpec

NODE_POOL_CRD = "nodepools.karpenter.sh"
EC2_NODE_CLASS_CRD = "ec2nodeclasses.karpenter.k8s.aws"
AUTO_NODE_CLASS_CRD = "nodeclasses.eks.amazonaws.com"
CRDS = {"karpenter": (NODE_POOL_CRD, EC2_NODE_CLASS_CRD), "auto": (NODE_POOL_CRD, AUTO_NODE_CLASS_CRD)}
SERVED_VERSION = "v1"


class Unreachable(Exception):
    """No kubeconfig, or no answer from the API server."""


class ClusterObjects(Protocol):
    def crd(self, name: str) -> dict[str, Any] | None:
        """The CustomResourceDefinition as the API returns it (camelCase keys), or None when there is none."""

    def cluster_object(self, group: str, version: str, plural: str, name: str) -> dict[str, Any] | None:
        """A cluster-scoped custom object, or None when there is none."""


class ApiObjects:
    """ClusterObjects read with the `kubernetes` client from a kubeconfig."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        try:
            self._client = config.new_client_from_config(config_file=kubeconfig, context=context)
        except (ConfigException, OSError) as exc:
            raise Unreachable(
                f"no usable kubeconfig ({kubeconfig or 'KUBECONFIG or ~/.kube/config'}): {exc}"
            ) from None
        self._extensions = client.ApiextensionsV1Api(self._client)
        self._custom = client.CustomObjectsApi(self._client)

    def _read(self, what: str, read: Callable[[], Any]) -> Any | None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return read()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise Unreachable(f"{what}: {exc.status} {exc.reason}") from None
        except HTTPError as exc:
            raise Unreachable(
                f"cannot reach the Kubernetes API at {self._client.configuration.host}: {exc}"
            ) from None

    def crd(self, name: str) -> dict[str, Any] | None:
        found = self._read(f"read CRD {name}", lambda: self._extensions.read_custom_resource_definition(name))
        if found is None:
            return None
        body: dict[str, Any] = self._client.sanitize_for_serialization(found)
        return body

    def cluster_object(self, group: str, version: str, plural: str, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._read(
            f"read {plural}.{group} {name}",
            lambda: self._custom.get_cluster_custom_object(group, version, plural, name),
        )
        return found


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def check_crd(objects: ClusterObjects, name: str, mode: str) -> Check:
    crd = objects.crd(name)
    owner = "EKS Auto Mode" if mode == "auto" else "Karpenter (its Helm chart installs its CRDs)"
    if crd is None:
        return Check(f"CRD {name}", False, "not installed in the cluster", f"install {owner} first")
    served = [v["name"] for v in crd.get("spec", {}).get("versions", []) if v.get("served")]
    if SERVED_VERSION not in served:
        return Check(
            f"CRD {name}",
            False,
            f"serves {', '.join(served) or 'no version'}, not {SERVED_VERSION}, which colo's objects use",
            f"upgrade {owner}",
        )
    if not _established(crd):
        return Check(f"CRD {name}", False, "installed but not Established", "see its status conditions")
    return Check(f"CRD {name}", True, f"installed, serving {SERVED_VERSION}")


def _gib(size: str) -> float:
    from kubernetes.utils.quantity import parse_quantity

    return float(parse_quantity(size)) / GIB


def check_auto_node_class(objects: ClusterObjects, spec: CapacitySpec) -> Check:
    """The NodeClass the NodePool names exists and its ephemeral storage holds what the plan puts on a node."""
    name = str(spec.auto_node_class)
    node_class = objects.cluster_object(AUTO_NODE_CLASS_GROUP, "v1", "nodeclasses", name)
    title = f"Auto Mode NodeClass {name}"
    if node_class is None:
        return Check(
            title,
            False,
            "not found in the cluster",
            "declare it (apiVersion eks.amazonaws.com/v1, kind NodeClass), or set colo:nodePool.karpenter.nodeClass",
        )
    size = ((node_class.get("spec") or {}).get("ephemeralStorage") or {}).get("size")
    gib = _gib(str(size)) if size else float(AUTO_MODE_DEFAULT_STORAGE_GIB)
    shown = size or f"{AUTO_MODE_DEFAULT_STORAGE_GIB}Gi (Auto Mode's default)"
    if gib < spec.disk_gib:
        return Check(
            title,
            False,
            f"gives a node {shown} of ephemeral storage; the pairs on a node need {spec.disk_gib} GiB for images "
            "and weights",
            f"set its spec.ephemeralStorage.size to at least {spec.disk_gib}Gi",
        )
    return Check(title, True, f"gives a node {shown}; the pairs on a node need {spec.disk_gib} GiB")


def kube_capacity_checks(spec: CapacitySpec, objects: Callable[[], ClusterObjects]) -> list[Check]:
    """Every cluster-side check for the capacity `spec` plans; one failed check when the API cannot be read."""
    try:
        reader = objects()
        checks = [check_crd(reader, name, spec.mode) for name in CRDS[spec.mode]]
        if spec.mode == "auto":
            checks.append(check_auto_node_class(reader, spec))
    except Unreachable as exc:
        return [
            Check(
                "Kubernetes API",
                False,
                str(exc),
                "point KUBECONFIG (or --kubeconfig/--context) at the cluster; colo preflight reads CRDs there",
            )
        ]
    return checks
