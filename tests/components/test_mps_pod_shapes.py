"""What computeSharing: mps puts in each pairing method's pod: the daemon, its order, the shared pipe directory and
/dev/shm, one UID, who asks for the GPU; or, under DRA, the driver's MPS on the claim."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import yaml

from colo.components.mps_daemon import ANSWERS, DAEMON_CONTAINER, PIPE_DIR
from colo.components.pod_security import RUN_AS
from colo.mock_run import ProgramRun
from colo.stackfiles import StackFile
from tests.components.stacks import (
    DEPLOYMENT,
    by_name,
    containers_in_start_order,
    env_of,
    limits_of,
    pod_spec,
    variant,
)
from tests.mps_figures import pretend_measured

GPU, SHARED = "nvidia.com/gpu", "nvidia.com/gpu.shared"


@pytest.fixture(autouse=True)
def _measured(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_measured(monkeypatch, "L40S")


def _mps(stack: str, *, embedding_cap: int | None = None, **cluster: Any) -> StackFile:
    base = variant(stack, cluster={"computeSharing": "mps", **cluster})
    values = copy.deepcopy(base.values)
    if embedding_cap is not None:
        for pair in values["pairs"]:
            pair["embedding"]["mpsActiveThreadPercentage"] = embedding_cap
    if stack == "prod":  # uuid-handoff under MPS points CUDA at the GPU by UUID: vLLM >= 0.24
        values["cluster"]["kubernetesVersion"] = "1.34"
        for pair in values["pairs"]:
            for role in ("llm", "embedding"):
                pair[role]["vllm"] = {"version": "0.24.0"}
    return replace(base, values=values)


def _pods(run: ProgramRun) -> list[dict[str, Any]]:
    return [pod_spec(d.inputs) for d in run.mocks.of_type(DEPLOYMENT)]


def _mounts(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["mountPath"]: m for m in container.get("volumeMounts", [])}


def _server_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in containers_in_start_order(spec) if c["name"] not in ("gpu-uuid", DAEMON_CONTAINER)]


def _assert_daemon_serves_every_server(spec: dict[str, Any]) -> dict[str, Any]:
    daemon = by_name(spec["initContainers"])[DAEMON_CONTAINER]
    assert daemon["restartPolicy"] == "Always"
    assert daemon["command"] == ["nvidia-cuda-mps-control", "-f"]
    assert daemon["startupProbe"]["exec"]["command"] == ANSWERS
    assert (
        daemon["livenessProbe"]["exec"]["command"] == daemon["readinessProbe"]["exec"]["command"] == ANSWERS
    )
    assert env_of(daemon)["CUDA_MPS_PIPE_DIRECTORY"] == PIPE_DIR
    order = [c["name"] for c in containers_in_start_order(spec)]
    servers = _server_containers(spec)
    assert all(order.index(DAEMON_CONTAINER) < order.index(s["name"]) for s in servers)
    volumes = {v["name"]: v for v in spec["volumes"]}
    for container in [daemon, *servers]:
        mounts = _mounts(container)
        assert mounts[PIPE_DIR]["name"] == "mps-pipe"
        assert mounts["/dev/shm"]["name"] == "dshm"  # one memory-backed /dev/shm for daemon and clients
        assert "runAsUser" not in container["securityContext"]  # the pod's UID for all, as MPS needs
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
    for server in servers:
        assert env_of(server)["CUDA_MPS_PIPE_DIRECTORY"] == PIPE_DIR
    assert "emptyDir" in volumes["mps-pipe"] and "emptyDir" in volumes["mps-log"]
    assert spec["securityContext"]["runAsUser"] == RUN_AS
    assert spec["shareProcessNamespace"] is True
    assert not {"hostIPC", "hostPID"} & set(spec)
    return daemon


def test_uuid_handoff_hands_the_gpu_to_the_daemon_and_every_server_becomes_a_client_by_uuid(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    for spec in _pods(run_variant(_mps("prod"))):
        names = [c["name"] for c in spec["initContainers"]]
        assert names[:2] == ["gpu-uuid", DAEMON_CONTAINER]
        daemon = _assert_daemon_serves_every_server(spec)
        assert limits_of(daemon)[GPU] == "1"
        for server in _server_containers(spec):
            assert GPU not in limits_of(server)
            env = env_of(server)
            assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["COLO_VLLM_ACCEPTS_UUID"] == "true"
            assert server["command"][:3] == ["bash", "/opt/colo/scripts/gpu-uuid-consume.sh", "--"]


def test_time_slice_gives_the_daemon_a_slice_and_the_plugin_one_more_per_gpu(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(_mps("local", embedding_cap=25))
    (spec,) = _pods(run)
    daemon = _assert_daemon_serves_every_server(spec)
    assert limits_of(daemon)[SHARED] == "1"
    servers = by_name(_server_containers(spec))
    assert env_of(servers["embedding"])["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in env_of(servers["llm"])
    (config_map,) = [c for c in run.mocks.of_type("kubernetes:core/v1:ConfigMap") if "nvidia" in c.name]
    plugin = yaml.safe_load(config_map.inputs["data"]["config.yaml"])
    assert plugin["sharing"]["timeSlicing"]["resources"] == [{"name": GPU, "replicas": 3}]


def test_dra_puts_mps_on_the_claim_and_leaves_dev_shm_to_the_driver(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(_mps("dev", draMpsSupport=True))
    (template,) = run.mocks.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
    devices = template.inputs["spec"]["spec"]["devices"]
    assert devices["config"] == [
        {
            "requests": ["gpu"],
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "GpuConfig",
                    "sharing": {"strategy": "MPS"},
                },
            },
        }
    ]
    (spec,) = _pods(run)
    assert DAEMON_CONTAINER not in [c["name"] for c in containers_in_start_order(spec)]
    assert "shareProcessNamespace" not in spec
    for server in containers_in_start_order(spec):
        assert "/dev/shm" not in _mounts(server)  # the driver's CDI edits mount its own there
        assert "CUDA_MPS_PIPE_DIRECTORY" not in env_of(server)  # and set this


def test_time_slice_sharing_adds_nothing(checked_in_run: Callable[[str, bool], ProgramRun]) -> None:
    for stack in ("local", "dev", "prod"):
        run = checked_in_run(stack, False)
        for spec in _pods(run):
            names = [c["name"] for c in containers_in_start_order(spec)]
            assert DAEMON_CONTAINER not in names and "shareProcessNamespace" not in spec
        for template in run.mocks.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"):
            assert "config" not in template.inputs["spec"]["spec"]["devices"]


def test_the_device_plugins_own_mps_gets_no_daemon_and_leaves_dev_shm_to_the_plugin(
    run_variant: Callable[[StackFile], ProgramRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the plugin's equal split holds the pair (and the pinned limit is known not to change the total)."""
    pretend_measured(monkeypatch, "L40S", reports_pinned_limit=False)
    base = _mps("local", embedding_cap=25)
    values = copy.deepcopy(base.values)
    values["nodePool"]["devicePlugin"] = {"managedBy": "elsewhere", "sharedReplicas": 2, "sharesBy": "mps"}
    values["pairs"][0]["llm"]["gpuMemoryUtilization"] = 0.4
    run = run_variant(replace(base, values=values))
    assert not run.mocks.of_type("kubernetes:apps/v1:DaemonSet")  # no plugin of colo's
    (spec,) = _pods(run)
    names = [c["name"] for c in containers_in_start_order(spec)]
    assert DAEMON_CONTAINER not in names and "shareProcessNamespace" not in spec
    for server in containers_in_start_order(spec):
        assert limits_of(server)[SHARED] == "1"
        assert "/dev/shm" not in _mounts(server)
    assert env_of(by_name(spec["initContainers"])["embedding"])["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
