"""Every stack's `colo render` output, applied server-side to a real API server, scheduled, and run by kwok.

The API server admits what no schema checks (Pod Security at the level colo labels its namespaces with, the
prometheus-operator CRDs' own schemas, cross-field validation); the scheduler decides whether each pair's pod
lands on exactly one GPU under each pairing method; the controllers make each Deployment Available.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.control_plane.api import Api, wait_until
from tests.control_plane.evidence import record
from tests.control_plane.nodes import GPU_RESOURCE, SHARED_RESOURCE
from tests.control_plane.stacks import STACKS, StackOnCluster, bring_up, remove
from tests.control_plane.workloads import (
    Probes,
    available,
    pending_reason,
    scheduled_node,
    wait_for_pair_pods,
)

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]

METHOD = {"local": "time-slice", "dev": "dra", "prod": "uuid-handoff", "prod-p5e": "uuid-handoff"}


@pytest.fixture(scope="module", params=sorted(STACKS))
def stack(
    request: pytest.FixtureRequest,
    api: Api,
    prometheus_crds: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StackOnCluster]:
    setup = STACKS[request.param]
    on_cluster = bring_up(api, setup, tmp_path_factory.mktemp(f"render-{setup.name}"))
    try:
        yield on_cluster
    finally:
        remove(api, on_cluster)


def test_the_api_server_accepts_every_object_colo_renders(stack: StackOnCluster) -> None:
    record(
        f"{stack.setup.name}-admitted",
        {"method": METHOD[stack.setup.name], "admitted": sorted(a.key for a in stack.applied.applied)},
    )
    assert stack.applied.refused == []
    assert sorted(a.key for a in stack.applied.applied) == sorted(
        f"{m['kind']}/{m['metadata'].get('namespace', '')}/{m['metadata']['name']}" for m in stack.manifests
    )


def test_no_object_draws_a_warning_from_admission_or_the_api_server(stack: StackOnCluster) -> None:
    """Pod Security warns at the `warn` level on every workload's pod template; the API server also warns on
    deprecated APIs and fields. (A field its schema does not know refuses a server-side apply outright.)"""
    assert stack.applied.warnings == {}


def test_the_servers_namespace_enforces_the_level_colo_labels_it_with(
    api: Api, stack: StackOnCluster
) -> None:
    (namespace,) = [m for m in stack.of_kind("Namespace") if m["metadata"]["name"] == pair_namespace(stack)]
    on_server = api.core.read_namespace(namespace["metadata"]["name"]).metadata.labels
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert {k: v for k, v in on_server.items() if k.startswith("pod-security")} == {
        k: v for k, v in labels.items() if k.startswith("pod-security")
    }


def test_a_privileged_pod_is_refused_in_the_servers_namespace(api: Api, stack: StackOnCluster) -> None:
    namespace = pair_namespace(stack)
    version = api.core.read_namespace(namespace).metadata.labels["pod-security.kubernetes.io/enforce-version"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "privileged", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]},
    }
    with pytest.raises(ApiException) as refused:
        api.apply(pod)
    message = json.loads(refused.value.body)["message"]
    assert refused.value.status == 403
    assert f'violates PodSecurity "restricted:{version}"' in message
    assert 'privileged (container "c" must not set securityContext.privileged=true)' in message


def test_every_pair_pod_is_scheduled_once_onto_the_stacks_gpu_nodes(api: Api, stack: StackOnCluster) -> None:
    pods = wait_for_pair_pods(api, stack)
    record(
        f"{stack.setup.name}-placement",
        {pair: [(p["metadata"]["name"], scheduled_node(p)) for p in found] for pair, found in pods.items()},
    )
    for pair, found in pods.items():
        assert len(found) == 1, f"{pair}: {len(found)} pods"
        assert scheduled_node(found[0]) in stack.node_names


def test_every_deployment_becomes_available_with_kwok_running_its_pods(
    api: Api, stack: StackOnCluster
) -> None:
    deployments = [d["metadata"]["name"] for d in stack.of_kind("Deployment")]
    namespace = pair_namespace(stack)
    wait_until(
        lambda: all(available(api, namespace, name) for name in deployments), 90, f"{deployments} Available"
    )


def test_each_pair_holds_exactly_one_gpu_under_its_pairing_method(
    api: Api, stack: StackOnCluster, probes: Probes
) -> None:
    """What the pairs hold, the scheduler's own accounting shows: a probe asking for one more GPU (one more slice,
    one more DRA claim) of the same nodes is bound exactly when the pairs leave a GPU free."""
    pods = wait_for_pair_pods(api, stack)
    free = stack.setup.instance.gpus * stack.setup.nodes - len(pods)
    method = METHOD[stack.setup.name]
    if method == "dra":
        for (pod,) in pods.values():
            (device,) = allocated_devices(api, pod)  # one device for the whole pod
            assert (device["driver"], device["pool"]) == ("gpu.nvidia.com", scheduled_node(pod))
            servers = pod["spec"].get("initContainers", []) + pod["spec"]["containers"]
            assert {s["name"]: [c["name"] for c in claims_of(s)] for s in servers} == {
                s["name"]: ["gpu"] for s in servers
            }
        assert probes.fits("dra") is (free > 0)
    elif method == "time-slice":
        # A single-GPU node each, and the pair's servers take every slice its GPU offers.
        assert probes.fits(SHARED_RESOURCE) is (free > 0)
    else:
        assert probes.fits(GPU_RESOURCE) is (free > 0)
        assert probes.fits(GPU_RESOURCE, name="second-probe") is (free > 1)


def test_the_field_reports_two_gpu_requests_stay_pending_where_colos_pair_fits(
    api: Api, stack: StackOnCluster, probes: Probes
) -> None:
    """The report's pod: the LLM and the embedding container each ask for `nvidia.com/gpu: 1`, so the pod needs
    two GPUs. On the same nodes, after colo's pairs are placed, it is left Pending with the scheduler's reason."""
    if stack.setup.name != "prod":
        pytest.skip("the report's shape asks for whole L40S GPUs: it is held against prod's g6e.12xlarge")
    wait_for_pair_pods(api, stack)
    namespace = pair_namespace(stack)
    (deployment, *_) = stack.of_kind("Deployment")
    template = copy.deepcopy(deployment["spec"]["template"])
    spec = template["spec"]
    servers = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"] + spec[
        "containers"
    ]
    for server in servers:
        server.pop("restartPolicy", None)
        server.pop("startupProbe", None)
        server["resources"]["limits"][GPU_RESOURCE] = "1"
        server["resources"]["requests"][GPU_RESOURCE] = "1"
    spec["containers"], spec["initContainers"] = servers, []
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "field-report-shape",
            "namespace": namespace,
            "labels": {"colo-test": "field-report"},
        },
        "spec": spec,
    }
    api.apply(pod)
    try:
        reason = wait_until(
            lambda: pending_reason(api, namespace, "field-report-shape"), 30, "the scheduler's verdict"
        )
        assert "Insufficient nvidia.com/gpu" in reason
        assert probes.fits(GPU_RESOURCE)  # a GPU is free: a pod asking for one is bound there
    finally:
        api.delete(pod)


def pair_namespace(stack: StackOnCluster) -> str:
    (deployment, *_) = stack.of_kind("Deployment")
    return str(deployment["metadata"]["namespace"])


def claims_of(container: dict[str, Any]) -> list[dict[str, Any]]:
    return list(container.get("resources", {}).get("claims", []))


def allocated_devices(api: Api, pod: dict[str, Any]) -> list[dict[str, Any]]:
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = api.get(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": status["resourceClaimName"], "namespace": pod["metadata"]["namespace"]},
        }
    )
    return list(claim["status"]["allocation"]["devices"]["results"])


def test_colos_podmonitors_and_prometheusrule_are_admitted_by_the_operators_crds(
    stack: StackOnCluster,
) -> None:
    kinds = {"PodMonitor", "PrometheusRule"}
    ours = [m for m in stack.manifests if m["kind"] in kinds]
    if not ours:
        pytest.skip(f"stack {stack.setup.name} asks for no prometheus-operator objects")
    admitted = {a.key: a for a in stack.applied.applied if a.key.split("/")[0] in kinds}
    assert sorted(admitted) == sorted(
        f"{m['kind']}/{m['metadata']['namespace']}/{m['metadata']['name']}" for m in ours
    )
    assert all(a.warnings == () for a in admitted.values())


def test_the_crds_schemas_are_enforced_so_a_wrong_field_would_show(
    api: Api, prometheus_crds: list[str]
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "crd-check"}}
    api.apply(namespace)
    monitor: dict[str, Any] = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "check", "namespace": "crd-check"},
        "spec": {"selector": {}, "podMetricsEndpoints": [{"port": "llm", "path": "/metrics"}]},
    }
    try:
        assert api.apply(monitor).warnings == ()
        unknown = copy.deepcopy(monitor)
        unknown["spec"]["podMetricsEndpoints"][0]["scrapeEvery"] = "15s"
        with pytest.raises(ApiException) as typo:  # server-side apply types the patch by the CRD's schema
            api.apply(unknown)
        assert (
            ".spec.podMetricsEndpoints[0].scrapeEvery: field not declared in schema"
            in json.loads(typo.value.body)["message"]
        )
        wrong_type = copy.deepcopy(monitor)
        wrong_type["spec"]["podMetricsEndpoints"] = "llm"
        with pytest.raises(ApiException) as refused:
            api.apply(wrong_type)
        assert ".spec.podMetricsEndpoints: expected list" in json.loads(refused.value.body)["message"]
    finally:
        api.delete_namespaces(["crd-check"])
