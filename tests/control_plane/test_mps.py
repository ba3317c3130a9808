"""computeSharing: mps on a real API server: the MPS pod shapes admitted at the `restricted` Pod Security level with no
warning, scheduled onto one GPU under each pairing method (the daemon's own slice included), and run by kwok with
the daemon among the init containers ahead of every server.

kwok marks a pod's containers started at one instant, in the order the pod lists them; that the kubelet starts a
restartable init container only after the one before it passed its startup probe is the kubelet's rule (sidecar
containers, Kubernetes >= 1.29), which this checks only as the order the pod asks for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.control_plane.api import Api, wait_until
from tests.control_plane.nodes import GPU_RESOURCE, SHARED_RESOURCE
from tests.control_plane.stacks import STACKS, StackOnCluster, StackSetup, bring_up, remove, time_slices
from tests.control_plane.workloads import Probes, available, wait_for_pair_pods
from tests.mps_figures import pretend_measured

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]

DAEMON = "mps-control"
# stack -> what its MPS variant changes: the cluster keys, and the vLLM release of every server (uuid-handoff
# points CUDA at the GPU by UUID under MPS, which vLLM resolves from 0.24)
VARIANTS: dict[str, tuple[dict[str, Any], str | None]] = {
    "local": ({"computeSharing": "mps"}, None),
    "prod": ({"computeSharing": "mps", "kubernetesVersion": "1.34"}, "0.24.0"),
    "dev": ({"computeSharing": "mps", "draMpsSupport": True}, None),
}


def mps_variant(setup: StackSetup, directory: Path) -> StackSetup:
    source: dict[str, Any] = yaml.safe_load(setup.stack_file.read_text())
    cluster, release = VARIANTS[setup.name]
    source["config"]["colo:cluster"].update(cluster)
    for pair in source["config"]["colo:pairs"]:
        for role in ("llm", "embedding", "reranker"):
            if role in pair and release is not None:
                pair[role]["vllm"] = {"version": release}
    path = directory / f"Pulumi.{setup.name}.yaml"
    path.write_text(yaml.safe_dump(source, sort_keys=False))
    return StackSetup(
        f"{setup.name}-mps",
        path,
        setup.instance,
        setup.nodes,
        setup.plugin,
        setup.pool_labels,
        setup.storage_class,
        setup.volume_size,
    )


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def stack(
    request: pytest.FixtureRequest,
    api: Api,
    prometheus_crds: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StackOnCluster]:
    directory = tmp_path_factory.mktemp(f"mps-{request.param}")
    setup = mps_variant(STACKS[request.param], directory)
    with pytest.MonkeyPatch.context() as patch:
        pretend_measured(patch, "L40S")  # no GPU has measured MPS figures yet; colo would refuse to render
        on_cluster = bring_up(api, setup, directory / "out")
    try:
        yield on_cluster
    finally:
        remove(api, on_cluster)


def _pod_specs(stack: StackOnCluster) -> list[dict[str, Any]]:
    return [d["spec"]["template"]["spec"] for d in stack.of_kind("Deployment")]


def test_the_mps_pods_are_admitted_at_the_restricted_level_without_a_warning(stack: StackOnCluster) -> None:
    servers = stack.of_kind("Deployment")[0]["metadata"]["namespace"]
    (namespace,) = [n for n in stack.of_kind("Namespace") if n["metadata"]["name"] == servers]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert stack.applied.refused == []
    assert stack.applied.warnings == {}


def test_the_daemon_runs_ahead_of_every_server_in_the_pods_of_the_in_pod_routes(
    api: Api, stack: StackOnCluster
) -> None:
    if stack.setup.plugin == "dra":  # the driver runs the daemon for the claim
        for spec in _pod_specs(stack):
            assert DAEMON not in [c["name"] for c in spec.get("initContainers", [])]
        return
    pods = wait_for_pair_pods(api, stack)
    namespace = stack.of_kind("Deployment")[0]["metadata"]["namespace"]
    names = [d["metadata"]["name"] for d in stack.of_kind("Deployment")]
    wait_until(lambda: all(available(api, namespace, n) for n in names), 90, f"{names} Available")
    for (pod,) in pods.values():
        live = api.core.read_namespaced_pod(pod["metadata"]["name"], namespace)
        assert live.spec.share_process_namespace is True
        statuses = [s.name for s in live.status.init_container_statuses]
        spec_order = [c.name for c in live.spec.init_containers]
        assert statuses == spec_order
        after = spec_order[spec_order.index(DAEMON) + 1 :]
        assert after and all(name in ("embedding", "reranker") for name in after)
        daemon = next(s for s in live.status.init_container_statuses if s.name == DAEMON)
        assert daemon.started and daemon.state.running is not None
        assert [s.name for s in live.status.container_statuses] == ["llm"]


def test_each_mps_pair_still_holds_exactly_one_gpu(api: Api, stack: StackOnCluster, probes: Probes) -> None:
    """The daemon's GPU is the pair's: handed over under uuid-handoff, one more slice of the same single-GPU node
    on time-slicing nodes, nothing under DRA (the driver's daemon serves the claim)."""
    pods = wait_for_pair_pods(api, stack)
    free = stack.setup.instance.gpus * stack.setup.nodes - len(pods)
    if stack.setup.plugin == "time-slicing":
        assert time_slices(stack.manifests) == 3  # two servers and the daemon
        assert probes.fits(SHARED_RESOURCE) is (free > 0)
    elif stack.setup.plugin == "dra":
        assert probes.fits("dra") is (free > 0)
    else:
        assert probes.fits(GPU_RESOURCE) is (free > 0)
        assert probes.fits(GPU_RESOURCE, name="second-probe") is (free > 1)
