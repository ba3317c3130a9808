"""The pod of a pair whose LLM spans GPUs, per pairing method: the pod holds the group's GPUs once, the LLM maps them
all in the order vLLM numbers its ranks, and each companion maps exactly the GPU its plan put it on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from colo.components import Cluster, ColocatedPairArgs, NodePool, ProgramError, ServerSpec, VllmImage
from colo.errors import InfeasiblePlanError
from colo.mock_run import ProgramRun, RecordingMocks, run_program
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
from tests.components.test_colocated_pair import CLAIM_TEMPLATE, declare

GPU = "nvidia.com/gpu"
CONSUME = ["bash", "/opt/colo/scripts/gpu-uuid-consume.sh", "--"]
DISCOVER = ["bash", "/opt/colo/scripts/gpu-uuid-discover.sh"]


def _pod(run: ProgramRun, pair: str = "big") -> dict[str, Any]:
    (deployment,) = [d for d in run.mocks.of_type(DEPLOYMENT) if d.inputs["metadata"]["name"] == pair]
    return pod_spec(deployment.inputs)


def _planned_gpus(run: ProgramRun, pair: str = "big") -> dict[str, int]:
    """Which GPU of the group the plan put each companion on, from the plan the program exports."""
    (planned,) = [p for p in run.outputs["plan"]["pairs"] if p["name"] == pair]
    return {
        server["role"]: gpu["gpu"]
        for gpu in planned["group"]["gpus"]
        for server in gpu["servers"]
        if server["role"] != "llm"
    }


def _claim_requests(container: dict[str, Any]) -> list[str | None]:
    return [claim.get("request") for claim in container["resources"].get("claims", [])]


def _with_reranker_on(gpu: int, **changes: Any) -> StackFile:
    stack = variant("tp", **changes)
    stack.values["pairs"][0]["reranker"]["groupGpu"] = gpu
    return stack


def test_dra_claims_one_device_per_gpu_of_the_group_and_each_companion_its_own(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("tp", False)
    (template,) = run.mocks.of_type(CLAIM_TEMPLATE)
    requests = template.inputs["spec"]["spec"]["devices"]["requests"]
    assert [r["name"] for r in requests] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert {r["exactly"]["deviceClassName"] for r in requests} == {"gpu.nvidia.com"}
    spec = _pod(run)
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpus-4"}]
    containers = by_name(containers_in_start_order(spec))
    placed = _planned_gpus(run)
    assert placed == {"embedding": 0, "reranker": 1}
    for role, gpu in placed.items():
        assert _claim_requests(containers[role]) == [f"gpu-{gpu}"]
        assert containers[role]["command"] == ["vllm", "serve"]  # it sees that one GPU alone
    llm = containers["llm"]
    assert _claim_requests(llm) == [None]  # the whole claim: every GPU of the group
    assert llm["command"][:3] == CONSUME
    assert {k: env_of(llm)[k] for k in ("COLO_GPU_COUNT", "COLO_GPU_SLOTS")} == {
        "COLO_GPU_COUNT": "4",
        "COLO_GPU_SLOTS": "all",
    }
    assert not any(GPU in limits_of(c) for c in containers.values())


def test_dra_records_each_requests_gpu_in_request_order_before_any_server_starts(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    spec = _pod(checked_in_run("tp", False))
    recorders = [c for c in spec["initContainers"] if c["name"].startswith("gpu-uuid")]
    assert [c["name"] for c in recorders] == ["gpu-uuid-0", "gpu-uuid-1", "gpu-uuid-2", "gpu-uuid-3"]
    assert spec["initContainers"][: len(recorders)] == recorders  # first, in order
    for slot, container in enumerate(recorders):
        assert "restartPolicy" not in container  # each runs to completion, one after another
        assert container["command"] == DISCOVER
        assert _claim_requests(container) == [f"gpu-{slot}"]
        assert env_of(container)["COLO_GPU_SLOT"] == str(slot)


def test_a_companion_placed_by_group_gpu_claims_that_gpus_request(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(_with_reranker_on(3))
    assert _planned_gpus(run) == {"embedding": 0, "reranker": 3}
    containers = by_name(containers_in_start_order(_pod(run)))
    assert _claim_requests(containers["reranker"]) == ["gpu-3"]


def test_uuid_handoff_hands_the_groups_gpus_to_the_llm_and_one_line_to_each_companion(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(_with_reranker_on(2, cluster={"gpuPairing": "uuid-handoff"}))
    spec = _pod(run)
    (discover,) = [c for c in spec["initContainers"] if c["name"] == "gpu-uuid"]
    assert limits_of(discover)[GPU] == "4" and env_of(discover)["COLO_GPU_COUNT"] == "4"
    assert "restartPolicy" not in discover  # it hands its four GPUs on, to the LLM that asks for four
    containers = by_name(containers_in_start_order(spec))
    llm = containers["llm"]
    assert limits_of(llm)[GPU] == "4"
    assert llm["command"][:3] == CONSUME and env_of(llm)["COLO_GPU_SLOTS"] == "all"
    assert "NVIDIA_VISIBLE_DEVICES" not in env_of(llm)  # the runtime gives it its four
    for role, gpu in _planned_gpus(run).items():
        companion = containers[role]
        env = env_of(companion)
        assert GPU not in limits_of(companion)
        assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
        assert (env["COLO_GPU_COUNT"], env["COLO_GPU_SLOTS"]) == ("4", str(gpu))
        assert companion["command"][:3] == CONSUME
    # the pod asks the scheduler for the group's four GPUs, no more: init 4, containers 4 (LLM) + 0
    assert sum(int(limits_of(c).get(GPU, 0)) for c in spec["containers"] + spec["initContainers"][1:]) == 4


def test_a_stack_of_single_gpu_and_tensor_parallel_pairs_gets_a_template_for_each(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    stack = variant("tp")
    small = {
        "name": "small",
        "llm": {"model": "Qwen/Qwen3-8B", "maxModelLen": 8192, "vllm": {"version": "0.19.1"}},
        "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": {"version": "0.19.1"}},
    }
    stack.values["pairs"][0]["llm"] |= {"tensorParallelSize": 2, "maxModelLen": 8192}
    stack.values["pairs"].append(small)
    run = run_variant(stack)
    names = sorted(t.inputs["metadata"]["name"] for t in run.mocks.of_type(CLAIM_TEMPLATE))
    assert names == ["gpus-2", "single-gpu"]
    assert _pod(run, "big")["resourceClaims"][0]["resourceClaimTemplateName"] == "gpus-2"
    assert _pod(run, "small")["resourceClaims"][0]["resourceClaimTemplateName"] == "single-gpu"
    assert "initContainers" not in _pod(run, "small") or not [
        c for c in _pod(run, "small")["initContainers"] if c["name"].startswith("gpu-uuid")
    ]


def test_time_slicing_a_tensor_parallel_pair_is_refused_before_any_resource() -> None:
    mocks = RecordingMocks()
    stack = variant("tp", cluster={"gpuPairing": "time-slice"})
    with pytest.raises(ProgramError) as raised:
        run_program(stack, mocks=mocks)
    assert isinstance(raised.value.error, InfeasiblePlanError)
    assert "time-slice cannot place a tensor-parallel LLM (pairs big)" in str(raised.value)
    assert mocks.resources == []


def test_a_tensor_parallel_pair_of_ones_own_declares_a_claim_template_of_its_groups_size() -> None:
    """rankBalance reaches the pair's plan: one companion for two GPUs leaves the second one's share idle."""
    release = VllmImage(version="0.19.1")
    args = ColocatedPairArgs(
        llm=ServerSpec(
            model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
            max_model_len=8192,
            tensor_parallel_size=2,
            vllm=release,
        ),
        embedding=ServerSpec(model="Qwen/Qwen3-Embedding-0.6B", vllm=release),
        rank_balance="refuse",
        namespace="team-ml",
        model_claim="models",
        cluster=Cluster(gpu_pairing="dra"),
        node_pool=NodePool(gpu="L40S", instance_type="g6e.12xlarge"),
    )
    with pytest.raises(ProgramError) as raised:  # one companion for two GPUs: refused as the pair asks
        declare(args, name="big")
    assert "rankBalance" in str(raised.value)
    mocks, _ = declare(replace(args, rank_balance="equalize"), name="big")
    (template,) = mocks.of_type(CLAIM_TEMPLATE)
    assert template.inputs["metadata"]["name"] == "big-gpus-2"
    assert [r["name"] for r in template.inputs["spec"]["spec"]["devices"]["requests"]] == ["gpu-0", "gpu-1"]
