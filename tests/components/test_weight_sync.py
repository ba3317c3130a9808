"""weightsUri in the pod: an init container copies the weights before any server starts, and only it writes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from colo.components.errors import ProgramError
from colo.errors import ConfigError
from colo.mock_run import ProgramRun, RecordingMocks, run_program
from colo.stackfiles import StackFile, load_stack
from tests.components.stacks import DEPLOYMENT, by_name, containers_in_start_order, env_of, pod_spec

SYNC_IMAGE = "registry.example/colo-sync:0.1.0"
EMBEDDING_URI, LLM_URI = "s3://models/qwen3-embedding-0.6b/", "s3://models/qwen3.6-27b-fp8/"
RESTRICTED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def synced_prod(*, sync_image: str | None = SYNC_IMAGE, **storage: str) -> StackFile:
    """prod, with the first pair (qwen27b) copying both servers' weights from S3."""
    base = load_stack("prod")
    values = copy.deepcopy(base.values)
    first = values["pairs"][0]
    first["embedding"]["weightsUri"] = EMBEDDING_URI
    first["llm"]["weightsUri"] = LLM_URI
    values["storage"] = {**values["storage"], **storage}
    if sync_image is not None:
        values["storage"]["syncImage"] = sync_image
    return replace(base, values=values)


def _pods(run: ProgramRun) -> dict[str, dict[str, Any]]:
    return {d.inputs["metadata"]["name"]: pod_spec(d.inputs) for d in run.mocks.of_type(DEPLOYMENT)}


def _planned(run: ProgramRun, pair: str) -> dict[str, dict[str, Any]]:
    (view,) = [p for p in run.outputs["plan"]["pairs"] if p["name"] == pair]
    return {s["role"]: s for s in view["servers"]}


@pytest.fixture(scope="module")
def synced_run() -> ProgramRun:
    return run_program(synced_prod(syncServiceAccount="model-reader"), mocks=RecordingMocks())


def test_copies_run_first_as_plain_init_containers_and_the_gpu_handoff_keeps_its_order(
    synced_run: ProgramRun,
) -> None:
    spec = _pods(synced_run)["qwen27b"]
    names = [c["name"] for c in containers_in_start_order(spec)]
    assert names == ["sync-qwen27b-embedding", "sync-qwen27b-llm", "gpu-uuid", "embedding", "llm"]
    # Kubelet hands the UUID container's GPU to the next container that asks for one: the copies ask
    # for none, so that is still the embedding server, and the UUID container stays a plain one.
    gpu_askers = [
        c["name"]
        for c in containers_in_start_order(spec)
        if "nvidia.com/gpu" in c["resources"].get("limits", {})
    ]
    assert gpu_askers == ["gpu-uuid", "embedding"]
    init = by_name(spec["initContainers"])
    for name in ("sync-qwen27b-embedding", "sync-qwen27b-llm", "gpu-uuid"):
        assert "restartPolicy" not in init[name]


def test_the_copy_runs_the_sync_command_with_the_configured_image_and_region(synced_run: ProgramRun) -> None:
    init = by_name(_pods(synced_run)["qwen27b"]["initContainers"])
    sync = init["sync-qwen27b-llm"]
    assert sync["image"] == SYNC_IMAGE
    assert sync["command"] == ["python", "-m", "colo.aws.weight_sync"]
    assert sync["args"] == [LLM_URI, "/models/qwen27b/llm"]
    assert env_of(sync) == {"PYTHONUNBUFFERED": "1", "AWS_REGION": "us-east-1"}  # prod's aws:region
    assert sync["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"memory": "512Mi"},
    }
    assert sync["securityContext"] == RESTRICTED
    assert init["sync-qwen27b-embedding"]["args"] == [EMBEDDING_URI, "/models/qwen27b/embedding"]


def test_only_the_copy_writes_the_weights_and_servers_load_what_it_wrote(synced_run: ProgramRun) -> None:
    spec = _pods(synced_run)["qwen27b"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["models"]["persistentVolumeClaim"] == {"claimName": "models"}
    assert "emptyDir" in volumes["tmp"]
    for container in containers_in_start_order(spec):
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        if container["name"].startswith("sync-"):
            assert mounts["/models"] == {"name": "models", "mountPath": "/models"}
            assert mounts["/tmp"]["name"] == "tmp"
        elif container["name"] != "gpu-uuid":
            assert mounts["/models"]["readOnly"] is True
            assert container["args"][0] == f"/models/qwen27b/{container['name']}"
    # Pairs that load from the Hub have no copy; their servers write the volume only in their compile caches.
    other = _pods(synced_run)["gemma31b"]
    assert not [c for c in other["initContainers"] if c["name"].startswith("sync-")]
    for container in containers_in_start_order(other):
        writes = [m for m in container["volumeMounts"] if m["name"] == "models" and not m.get("readOnly")]
        assert all(m["subPath"].startswith(".vllm-cache/") for m in writes), container["name"]


def test_the_startup_probe_leaves_out_the_download_and_the_rollout_waits_for_the_copy(
    synced_run: ProgramRun, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    synced, hub = _planned(synced_run, "qwen27b"), _planned(checked_in_run("prod", False), "qwen27b")
    containers = by_name(containers_in_start_order(_pods(synced_run)["qwen27b"]))
    for role in ("embedding", "llm"):
        assert synced[role]["startup_probe_breakdown"]["download_weights"] == 0
        assert hub[role]["startup_probe_breakdown"]["download_weights"] > 0
        assert synced[role]["startup_probe_seconds"] < hub[role]["startup_probe_seconds"]
        probe = containers[role]["startupProbe"]
        assert probe["periodSeconds"] * probe["failureThreshold"] == synced[role]["startup_probe_seconds"]
    (deployment,) = [d for d in synced_run.mocks.of_type(DEPLOYMENT) if d.name == "qwen27b"]
    timeout = int(synced_run.mocks.options_of(deployment).custom_timeouts["create"].rstrip("s"))
    # The Qwen3.6-27B checkpoint alone takes minutes to copy at the 100 MiB/s default.
    assert timeout > sum(s["startup_probe_seconds"] for s in synced.values()) + 29_536_614_400 / 2**20 / 100


def test_pods_that_copy_use_the_sync_service_account_and_only_they_get_a_token(
    synced_run: ProgramRun,
) -> None:
    deployments = {d.inputs["metadata"]["name"]: d for d in synced_run.mocks.of_type(DEPLOYMENT)}
    spec = pod_spec(deployments["qwen27b"].inputs)
    assert spec["serviceAccountName"] == "model-reader"
    assert spec["automountServiceAccountToken"] is True
    assert "CKV_K8S_38" in deployments["qwen27b"].inputs["metadata"]["annotations"]["checkov.io/skip1"]
    for name in ("qwen35b-moe", "gemma31b"):
        spec = pod_spec(deployments[name].inputs)
        assert "serviceAccountName" not in spec
        assert spec["automountServiceAccountToken"] is False
        assert "annotations" not in deployments[name].inputs["metadata"]


def test_without_a_sync_service_account_no_pod_gets_a_token() -> None:
    run = run_program(synced_prod(), mocks=RecordingMocks())
    spec = _pods(run)["qwen27b"]
    assert [c["name"] for c in spec["initContainers"]][:2] == ["sync-qwen27b-embedding", "sync-qwen27b-llm"]
    assert "serviceAccountName" not in spec
    assert spec["automountServiceAccountToken"] is False


def test_without_native_sidecars_the_copies_are_the_only_init_containers_and_still_first() -> None:
    stack = synced_prod()
    values = copy.deepcopy(stack.values)
    values["cluster"] = {
        **values["cluster"],
        "nativeSidecars": False,
        "gpuPairing": "dra",
        "kubernetesVersion": "1.34",
    }
    run = run_program(replace(stack, values=values), mocks=RecordingMocks())
    spec = _pods(run)["qwen27b"]
    assert [c["name"] for c in spec["initContainers"]] == ["sync-qwen27b-embedding", "sync-qwen27b-llm"]
    assert [c["name"] for c in spec["containers"]] == ["embedding", "llm"]
    for sync in spec["initContainers"]:
        assert "claims" not in sync["resources"]  # the DRA claim stays with the servers


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_weights_from_s3_without_a_sync_image_register_nothing(preview: bool) -> None:
    mocks = RecordingMocks()
    with pytest.raises(ProgramError) as raised:
        run_program(synced_prod(sync_image=None), preview=preview, mocks=mocks)
    assert isinstance(raised.value.error, ConfigError)
    (problem,) = raised.value.error.problems
    assert problem.path == "colo:storage.syncImage"
    assert "qwen27b" in problem.message
    assert mocks.resources == []
