"""What the cluster can run: node images colo can manage, GPUs the instances really have, CPU and memory."""

from __future__ import annotations

import copy
from typing import Any

from colo.config import parse_stack_config
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack


def _plan(stack: str, edit: Any) -> Plan:
    raw = copy.deepcopy(load_stack(stack).values)
    edit(raw)
    return make_plan(parse_stack_config(raw))


def _paths(plan: Plan) -> dict[str, str]:
    return {p.path: p.message for p in plan.problems}


def test_default_requests_fit_the_smallest_single_gpu_node() -> None:
    plan = make_plan(parse_stack_config(load_stack("local").values))
    assert plan.feasible, plan.problems
    assert [(s.role, s.cpu, s.memory) for s in plan.pairs[0].servers] == [
        ("embedding", "1", "6Gi"),
        ("llm", "2", "20Gi"),
    ]


def test_requests_beyond_what_the_node_can_allocate_are_refused_before_deploy() -> None:
    def hungry(raw: dict[str, Any]) -> None:
        raw["pairs"][0]["llm"]["memory"] = "32Gi"

    problems = _paths(_plan("local", hungry))
    assert "would stay Pending" in problems["colo:pairs[0].llm.memory"]


def test_pairs_sharing_a_node_add_up() -> None:
    def many_cpus(raw: dict[str, Any]) -> None:
        for pair in raw["pairs"]:
            pair["llm"]["cpu"] = "16"

    problems = _paths(_plan("prod", many_cpus))  # three pairs on one 48-vCPU g6e.12xlarge
    assert "g6e.12xlarge" in problems["colo:pairs[0].llm.cpu"]


def test_an_existing_pool_with_a_named_instance_type_must_match_the_gpu() -> None:
    def wrong_gpu(raw: dict[str, Any]) -> None:
        raw["nodePool"]["gpu"] = "H100-SXM"

    assert "carries L40S GPUs" in _paths(_plan("local", wrong_gpu))["colo:nodePool.gpu"]


def test_an_existing_pool_without_an_instance_type_is_not_second_guessed() -> None:
    def unnamed(raw: dict[str, Any]) -> None:
        raw["nodePool"] = {"mode": "existing", "gpu": "H100-SXM", "nodeSelector": {"pool": "h100"}}
        raw["cluster"]["gpuPairing"] = "dra"

    plan = _plan("local", unnamed)
    assert "colo:nodePool.gpu" not in _paths(plan)


def test_time_slice_on_nodes_of_several_gpus_names_the_setting_that_said_so() -> None:
    def eight_per_node(raw: dict[str, Any]) -> None:
        raw["nodePool"] = {
            "mode": "existing",
            "gpu": "H100-SXM",
            "gpusPerNode": 8,
            "nodeSelector": {"p": "h"},
        }
        raw["cluster"]["gpuPairing"] = "time-slice"

    problems = _paths(_plan("local", eight_per_node))
    message = problems["colo:nodePool.gpusPerNode"]
    assert "the pool gives 8 per node" in message
    assert "has 8" not in message  # no instance type was named, so none is said to have them
    assert "colo:nodePool.instanceType" not in problems


def test_colo_manages_only_node_images_with_an_eks_nvidia_ami() -> None:
    def generic(raw: dict[str, Any]) -> None:
        raw["cluster"]["nodeImage"] = "generic-nvidia-runtime"

    assert "mode: existing" in _paths(_plan("prod", generic))["colo:cluster.nodeImage"]


def test_one_read_write_once_volume_cannot_serve_pairs_on_several_nodes() -> None:
    def spread(raw: dict[str, Any]) -> None:
        raw["nodePool"]["instanceType"] = "g6e.2xlarge"  # one GPU a node: three pairs, three nodes
        raw["nodePool"]["spareGpus"] = 0

    assert "ReadWriteMany" in _paths(_plan("prod", spread))["colo:storage.accessMode"]
