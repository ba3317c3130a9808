"""A pair whose LLM spans four GPUs (stacks/Pulumi.tp.yaml), rendered, applied and scheduled on kwok nodes of four
and eight GPUs: the pod lands on one node holding exactly the group's GPUs, and under DRA the scheduler's
allocation puts each companion on the device of the GPU its plan placed it on, the LLM on all four. A layout the
pair asks to refuse is refused before anything reaches the cluster; an equalized one carries the plan's sizes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from tests.control_plane.api import Api, manifests_in, wait_until
from tests.control_plane.evidence import record
from tests.control_plane.nodes import G6E_12XLARGE, GPU_RESOURCE, P5E_48XLARGE
from tests.control_plane.stacks import POOL_LABEL, StackOnCluster, StackSetup, bring_up, remove
from tests.control_plane.workloads import Probes, available, scheduled_node, wait_for_pair_pods
from tests.paths import REPO_ROOT

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]

TP_STACK = REPO_ROOT / "stacks" / "Pulumi.tp.yaml"
GROUP = 4  # the tp stack's tensorParallelSize
SETUPS = {
    # eight H200s on one node, published as a ResourceSlice of eight devices
    "tp-dra-p5e": StackSetup(
        "tp-dra-p5e",
        TP_STACK,
        P5E_48XLARGE,
        1,
        "dra",
        {POOL_LABEL: "colo-tp"},
        "gp3",
        "500Gi",
        node_pool_edit={"gpu": "H200", "instanceType": "p5e.48xlarge"},
    ),
    # four L40S advertised by the device plugin as nvidia.com/gpu: the group takes the whole node
    "tp-uuid-g6e": StackSetup(
        "tp-uuid-g6e",
        TP_STACK,
        G6E_12XLARGE,
        1,
        "whole",
        {POOL_LABEL: "colo-tp", "nvidia.com/gpu.present": "true"},
        "gp3",
        "500Gi",
        cluster_edit={"gpuPairing": "uuid-handoff"},
    ),
    # the same pod on eight H200s: it takes four, and four stay free
    "tp-uuid-p5e": StackSetup(
        "tp-uuid-p5e",
        TP_STACK,
        P5E_48XLARGE,
        1,
        "whole",
        {POOL_LABEL: "colo-tp", "nvidia.com/gpu.present": "true"},
        "gp3",
        "500Gi",
        node_pool_edit={"gpu": "H200", "instanceType": "p5e.48xlarge"},
        cluster_edit={"gpuPairing": "uuid-handoff"},
    ),
}


@pytest.fixture(scope="module", params=sorted(SETUPS))
def stack(
    request: pytest.FixtureRequest, api: Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StackOnCluster]:
    setup = SETUPS[request.param]
    on_cluster = bring_up(api, setup, tmp_path_factory.mktemp(f"render-{setup.name}"))
    try:
        yield on_cluster
    finally:
        remove(api, on_cluster)


def _plan_of(setup: StackSetup, directory: Path) -> dict[str, Any]:
    """Which GPU of the group the plan put each companion on, and the utilizations it sized."""
    stack_file = setup.stack_file_in(directory)
    values = {k.removeprefix("colo:"): v for k, v in yaml.safe_load(stack_file.read_text())["config"].items()}
    values.pop("aws:region", None)
    plan = make_plan(parse_stack_config(values))
    (pair,) = plan.pairs
    assert pair.group is not None
    companions = dict(zip((s.role for s in pair.servers[:-1]), pair.group.companion_gpus, strict=True))
    return {
        "gpu_of": {str(role): gpu for role, gpu in companions.items()},
        "utilization": {str(s.role): s.memory_plan.utilization for s in pair.servers},
    }


def _pod(api: Api, stack: StackOnCluster) -> dict[str, Any]:
    ((pod,),) = wait_for_pair_pods(api, stack).values()
    return pod


def _containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]}


def _claim(api: Api, pod: dict[str, Any]) -> dict[str, Any]:
    (status,) = pod["status"]["resourceClaimStatuses"]
    return api.get(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": status["resourceClaimName"], "namespace": pod["metadata"]["namespace"]},
        }
    )


def test_the_api_server_admits_the_group_pods_objects_without_a_warning(stack: StackOnCluster) -> None:
    assert stack.applied.refused == []
    assert stack.applied.warnings == {}


def test_the_deployment_becomes_available_with_kwok_running_its_init_containers_and_servers(
    api: Api, stack: StackOnCluster
) -> None:
    (deployment,) = stack.of_kind("Deployment")
    namespace, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
    wait_until(lambda: available(api, namespace, name), 90, f"{name} Available")


def test_the_pod_lands_on_one_node_and_holds_exactly_the_groups_gpus(
    api: Api, stack: StackOnCluster, probes: Probes
) -> None:
    """The scheduler's own accounting: probes asking for one GPU each are bound while the node has GPUs the pod
    does not hold, and the next one stays Pending."""
    pod = _pod(api, stack)
    assert scheduled_node(pod) in stack.node_names
    free = stack.setup.instance.gpus - GROUP
    resource = "dra" if stack.setup.plugin == "dra" else GPU_RESOURCE
    bound = [probes.fits(resource, name=f"probe-{i}") for i in range(free + 1)]
    record(f"{stack.setup.name}-probes", {"node": scheduled_node(pod), "free_gpus": free, "bound": bound})
    assert bound == [True] * free + [False]


def test_under_dra_each_companion_gets_the_device_of_the_gpu_its_plan_placed_it_on(
    api: Api, stack: StackOnCluster, tmp_path: Path
) -> None:
    if stack.setup.plugin != "dra":
        pytest.skip("the allocation per request is DRA's")
    pod = _pod(api, stack)
    results = _claim(api, pod)["status"]["allocation"]["devices"]["results"]
    device_of = {r["request"]: (r["pool"], r["device"]) for r in results}
    assert sorted(device_of) == [f"gpu-{k}" for k in range(GROUP)]
    assert len(set(device_of.values())) == GROUP  # four different GPUs
    assert {pool for pool, _ in device_of.values()} == {scheduled_node(pod)}  # of the node the pod runs on
    containers = _containers(pod)
    plan = _plan_of(stack.setup, tmp_path)
    placed = {}
    for role, gpu in plan["gpu_of"].items():
        (claim,) = containers[role]["resources"]["claims"]
        assert claim["request"] == f"gpu-{gpu}"
        placed[role] = device_of[claim["request"]]
    for k in range(GROUP):  # each recorder sees the device rank k will use
        (claim,) = containers[f"gpu-uuid-{k}"]["resources"]["claims"]
        assert claim["request"] == f"gpu-{k}"
    assert containers["llm"]["resources"]["claims"] == [{"name": "gpu"}]  # every device of the claim
    record(
        f"{stack.setup.name}-allocation",
        {"devices_by_request": {k: list(v) for k, v in device_of.items()}, "companions": placed},
    )


def test_the_running_servers_carry_the_utilizations_the_balanced_plan_sized(
    api: Api, stack: StackOnCluster, tmp_path: Path
) -> None:
    """equalize (the stack's default) raised the reranker's utilization: the pod runs with the plan's."""
    containers = _containers(_pod(api, stack))
    plan = _plan_of(stack.setup, tmp_path)
    for role, utilization in plan["utilization"].items():
        args = containers[role]["args"]
        assert float(args[args.index("--gpu-memory-utilization") + 1]) == utilization


def test_a_layout_the_pair_asks_to_refuse_never_reaches_the_cluster(api: Api, tmp_path: Path) -> None:
    source: dict[str, Any] = yaml.safe_load(TP_STACK.read_text())
    source["config"]["colo:pairs"][0]["rankBalance"] = "refuse"
    source["config"]["colo:cluster"]["namespace"] = "colo-tp-refused"
    stack_file = tmp_path / "Pulumi.tp-refused.yaml"
    stack_file.write_text(yaml.safe_dump(source, sort_keys=False))
    out = tmp_path / "rendered"
    assert main(["render", "--config", str(stack_file), "--cwd", str(REPO_ROOT), "--out", str(out)]) != 0
    assert not (out / "manifests").exists() or manifests_in(out / "manifests") == []
    assert not api.exists({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "colo-tp-refused"}})
