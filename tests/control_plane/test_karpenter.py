"""The example stack of each Karpenter mode on a real API server with Karpenter's CRDs installed (the files vendored
under tests/components/crd_schemas/karpenter, Karpenter 1.14.1): colo's NodePool and EC2NodeClass are admitted,
CEL rules and all; `colo preflight` reads the CRDs through the real client; and the pairs schedule onto a kwok node
labelled and tainted as Karpenter (or EKS Auto Mode) would launch it from that NodePool.

No Karpenter controller runs here: what is shown is that the objects are valid and that a node of the shape they
ask for takes the pairs. AWS publishes no CRD of Auto Mode's NodeClass, so the auto stack's NodePool is checked
against Karpenter's NodePool CRD, and its NodeClass is not declared (colo declares none).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from colo.kube_preflight import CRDS, ApiObjects, check_crd
from tests.components.crd_schemas import karpenter_crds
from tests.control_plane.api import Api, wait_until
from tests.control_plane.cluster import ControlPlane
from tests.control_plane.evidence import record
from tests.control_plane.nodes import G6E_XLARGE
from tests.control_plane.stacks import READY_WITHIN, StackOnCluster, StackSetup, bring_up, remove, render
from tests.control_plane.workloads import available, wait_for_pair_pods
from tests.paths import REPO_ROOT

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]

EXAMPLES = REPO_ROOT / "examples" / "capacity"
MODES = {"karpenter": ("Pulumi.karpenter.yaml", "whole"), "auto": ("Pulumi.auto-mode.yaml", "dra")}
# What Karpenter adds to every node it launches besides the NodePool's labels and requirements
# (sigs.k8s.io/karpenter pkg/apis/v1 labels.go NodePoolLabelKey; karpenter-provider-aws labels.go
# LabelNodeClass; EKS Auto Mode's eks.amazonaws.com/compute-type: auto, "Create a Node Pool for EKS Auto Mode").
LAUNCH_LABELS = {
    "karpenter": {"karpenter.k8s.aws/ec2nodeclass": "colo-gpu"},
    "auto": {"eks.amazonaws.com/compute-type": "auto"},
}


def _established(api: Api, name: str) -> bool:
    crd = api.get(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
        }
    )
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def installed_crds(api: Api) -> Iterator[list[dict[str, Any]]]:
    crds = karpenter_crds()
    for crd in crds:
        api.apply(crd)
    try:
        names = [crd["metadata"]["name"] for crd in crds]
        wait_until(lambda: all(_established(api, n) for n in names), 60, f"CRDs {names} to be established")
        api.dynamic.resources.invalidate_cache()  # discovery must see the new kinds
        yield crds
    finally:
        for crd in crds:
            api.delete(crd)


def rendered(mode: str, out: Path) -> list[dict[str, Any]]:
    return render(EXAMPLES / MODES[mode][0], out / "rendered")


def the(manifests: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def launched_labels(mode: str, node_pool: dict[str, Any]) -> dict[str, str]:
    """The labels of a node Karpenter launches from `node_pool`: its template's, the pool's name, and for each
    requirement one value it allows (the smallest instance type and that type's GPU facts)."""
    template = node_pool["spec"]["template"]
    labels = {
        **template["metadata"]["labels"],
        "karpenter.sh/nodepool": node_pool["metadata"]["name"],
        **LAUNCH_LABELS[mode],
    }
    for requirement in template["spec"]["requirements"]:
        assert requirement["operator"] == "In"
        labels[requirement["key"]] = requirement["values"][0]
    return labels


@pytest.fixture(scope="module", params=sorted(MODES))
def stack(
    request: pytest.FixtureRequest,
    api: Api,
    installed_crds: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StackOnCluster]:
    mode: str = request.param
    out = tmp_path_factory.mktemp(f"render-{mode}")
    manifests = rendered(mode, out)
    node_pool = the(manifests, "NodePool")
    labels = launched_labels(mode, node_pool)
    assert labels["node.kubernetes.io/instance-type"] == G6E_XLARGE.name
    setup = StackSetup(
        mode, EXAMPLES / MODES[mode][0], G6E_XLARGE, 1, MODES[mode][1], labels, *_volume(manifests)
    )
    on_cluster = bring_up(api, setup, out, manifests)
    try:
        yield on_cluster
    finally:
        remove(api, on_cluster)
        for cluster_scoped in (m for m in manifests if m["kind"] in ("NodePool", "EC2NodeClass")):
            api.delete(cluster_scoped)


def _volume(manifests: list[dict[str, Any]]) -> tuple[str, str]:
    claim = the(manifests, "PersistentVolumeClaim")["spec"]
    return claim["storageClassName"], claim["resources"]["requests"]["storage"]


def test_colo_preflight_reads_karpenters_crds_with_the_real_client(
    control_plane: ControlPlane, installed_crds: list[dict[str, Any]]
) -> None:
    objects = ApiObjects(str(control_plane.kubeconfig), None)
    checks = [check_crd(objects, name, "karpenter") for name in CRDS["karpenter"]]
    assert [(c.name, c.ok, c.detail) for c in checks] == [
        (f"CRD {name}", True, "installed, serving v1") for name in CRDS["karpenter"]
    ]
    (missing,) = [check_crd(objects, "nodeclasses.eks.amazonaws.com", "auto")]
    assert (missing.ok, missing.detail) == (False, "not installed in the cluster")


def test_the_api_server_admits_colos_karpenter_objects_without_a_warning(stack: StackOnCluster) -> None:
    kinds = {"NodePool", "EC2NodeClass"}
    admitted = sorted(a.key for a in stack.applied.applied if a.key.split("/")[0] in kinds)
    record(f"{stack.setup.name}-karpenter-admitted", {"admitted": admitted})
    assert stack.applied.refused == []
    assert stack.applied.warnings == {}
    expected = {"karpenter": ["EC2NodeClass//colo-gpu", "NodePool//colo-gpu"], "auto": ["NodePool//colo-gpu"]}
    assert admitted == expected[stack.setup.name]


def _refusal(api: Api, manifest: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as refused:
        api.apply(manifest)
    assert refused.value.status == 422
    return str(json.loads(refused.value.body)["message"])


def test_karpenters_cel_rules_run_on_the_server(api: Api, stack: StackOnCluster) -> None:
    """The JSON schemas the unit tests use cannot run CEL; the API server does, so a wrong object is refused."""
    pool = copy.deepcopy(the(stack.manifests, "NodePool"))
    pool["metadata"]["name"] = "colo-gpu-wrong"
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.k8s.aws/instance-gpu-vendor", "operator": "In", "values": ["nvidia"]}
    )
    assert 'label domain "karpenter.k8s.aws" is restricted' in _refusal(api, pool)
    if stack.setup.name == "karpenter":
        node_class = copy.deepcopy(the(stack.manifests, "EC2NodeClass"))
        node_class["metadata"]["name"] = "colo-gpu-wrong"
        node_class["spec"]["instanceProfile"] = "also-a-profile"
        assert "must specify exactly one of ['role', 'instanceProfile']" in _refusal(api, node_class)


def test_the_pairs_schedule_onto_a_node_shaped_as_karpenter_launches_it(
    api: Api, stack: StackOnCluster
) -> None:
    pods = wait_for_pair_pods(api, stack)
    (node,) = stack.node_names
    record(
        f"{stack.setup.name}-karpenter-placement",
        {pair: [p["spec"]["nodeName"] for p in found] for pair, found in pods.items()},
    )
    for found in pods.values():
        (pod,) = found
        assert pod["spec"]["nodeName"] == node
        assert pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    namespace = the(stack.manifests, "Deployment")["metadata"]["namespace"]
    for deployment in stack.of_kind("Deployment"):
        name = deployment["metadata"]["name"]
        wait_until(
            lambda name=name: available(api, namespace, name),
            READY_WITHIN,
            f"deployment {name} to be available",
        )


def test_the_node_pools_taint_is_the_one_the_pairs_tolerate(stack: StackOnCluster) -> None:
    taints = the(stack.manifests, "NodePool")["spec"]["template"]["spec"]["taints"]
    (node,) = [m for m in stack.prerequisites if m["kind"] == "Node"]
    assert node["spec"]["taints"] == taints  # the kwok node carries exactly the NodePool's taint
