"""A stack whose LLM spans the GPUs of one node: placed on one node, sized on every GPU of its group, its flags,
and what colo refuses about it (a group larger than a node, time-slicing, an unknown interconnect said)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from colo.cli import main
from colo.config import parse_stack_config
from colo.plan.placement import Placement
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan

VERSION = "0.33.0"


def _values(
    tp: int = 2,
    *,
    instance: str = "p5e.48xlarge",
    gpu: str = "H200",
    pairing: str = "dra",
    balance: str | None = None,
    single_pairs: int = 0,
) -> dict[str, Any]:
    release = {"version": VERSION}
    big: dict[str, Any] = {
        "name": "big",
        "llm": {"model": "Qwen/Qwen3-32B", "maxModelLen": 32768, "tensorParallelSize": tp, "vllm": release},
        "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": release},
        "reranker": {"model": "Qwen/Qwen3-Reranker-0.6B", "maxModelLen": 4096, "vllm": release},
    }
    if balance is not None:
        big["rankBalance"] = balance
    small = [
        {
            "name": f"small-{i}",
            "llm": {"model": "Qwen/Qwen3-8B", "maxModelLen": 16384, "vllm": release},
            "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": release},
        }
        for i in range(single_pairs)
    ]
    return {
        "cluster": {"gpuPairing": pairing},
        "nodePool": {"mode": "existing", "gpu": gpu, "instanceType": instance},
        "pairs": [big, *small],
    }


def _plan(**kwargs: Any) -> Plan:
    return make_plan(parse_stack_config(_values(**kwargs)))


def test_a_tp2_pair_takes_two_gpus_of_one_node_and_single_gpu_pairs_fill_the_rest() -> None:
    plan = _plan(single_pairs=3)
    assert plan.feasible, plan.problems
    assert [p.placement for p in plan.pairs] == [
        Placement(0, 0, 2),
        Placement(0, 2),
        Placement(0, 3),
        Placement(0, 4),
    ]
    assert plan.node_count == 1


def test_the_llm_is_started_with_its_group_size_and_every_rank_is_sized() -> None:
    plan = _plan(tp=4)
    big = plan.pairs[0]
    group = big.group
    assert group is not None and group.tensor_parallel_size == 4 and big.gpu_count == 4
    args = big.llm.args
    assert args[args.index("--tensor-parallel-size") + 1] == "4"
    assert "--tensor-parallel-size" not in " ".join(s for server in big.servers[:-1] for s in server.args)
    assert all(gpu.servers[-1].budget.spec.tensor_parallel_size == 4 for gpu in group.gpus)
    # an 8-GPU HGX board: NVSwitch, so NCCL's NVLink SHARP buffers are counted from three ranks on
    assert group.gpus[0].servers[-1].budget.spec.nvswitch


def test_pcie_nodes_size_tp4_without_custom_all_reduce_buffers() -> None:
    hgx = _plan(tp=4).pairs[0].llm.memory_plan.budget
    pcie = _plan(tp=4, instance="g6e.12xlarge", gpu="L40S").pairs[0].llm.memory_plan.budget
    assert not pcie.spec.nvlink and not pcie.spec.nvswitch
    assert hgx.spec.nvlink and hgx.spec.nvswitch


def test_colo_plan_shows_every_gpu_of_the_group_with_its_servers(capsys: pytest.CaptureFixture[str]) -> None:
    view = plan_view(_plan(tp=4))
    group = view["pairs"][0]["group"]
    assert view["pairs"][0]["gpus"] == [0, 1, 2, 3]
    assert [g["node_gpu"] for g in group["gpus"]] == [0, 1, 2, 3]
    assert [[s["name"] for s in g["servers"]] for g in group["gpus"]] == [
        ["big-embedding", "big-llm rank 0"],
        ["big-reranker", "big-llm rank 1"],
        ["big-llm rank 2"],
        ["big-llm rank 3"],
    ]
    assert group["gpus"][2]["idle_mib"] > 0 and group["notes"]
    json.dumps(view)  # plain data


def test_the_table_prints_a_line_per_gpu(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    stack = tmp_path / "Pulumi.tp.yaml"
    values = _values(tp=2)
    stack.write_text(yaml.safe_dump({"config": {f"colo:{k}": v for k, v in values.items()}}))
    assert main(["plan", "--config", str(stack)]) == 0
    out = capsys.readouterr().out
    assert "pair big -> node 0 GPUs 0-1 (tensor parallel 2): fits" in out
    assert "GPU 0 of the group (node GPU 0) (its rank sizes the LLM): big-embedding" in out
    assert "GPU 1 of the group (node GPU 1): big-reranker" in out and "big-llm rank 1" in out


def test_refused_balance_is_a_plan_problem_naming_the_pair_key() -> None:
    plan = _plan(tp=4, balance="refuse")
    assert not plan.feasible
    assert "colo:pairs[0].rankBalance" in [p.path for p in plan.problems]


def test_a_group_larger_than_the_node_is_refused_naming_the_key() -> None:
    plan = _plan(tp=8, instance="g6e.12xlarge", gpu="L40S")
    (problem,) = [p for p in plan.problems if p.path == "colo:pairs[0].llm.tensorParallelSize"]
    assert "8 GPUs, but a node of g6e.12xlarge has 4" in problem.message


def test_time_slicing_cannot_place_a_tensor_parallel_llm() -> None:
    plan = _plan(pairing="time-slice")
    (problem,) = [p for p in plan.problems if p.path == "colo:cluster.gpuPairing"]
    assert "cannot place a tensor-parallel LLM (pairs big)" in problem.message
    assert "dra" in problem.message and "uuid-handoff" in problem.message


def test_nodes_of_an_unknown_instance_type_have_their_interconnect_assumed_and_said() -> None:
    values = _values(tp=2)
    values["nodePool"] = {"mode": "existing", "gpu": "H200", "gpusPerNode": 4}
    plan = make_plan(parse_stack_config(values))
    assert plan.feasible, plan.problems
    assert any(w.path == "colo:nodePool.instanceType" for w in plan.warnings)
    values["nodePool"] = {"mode": "existing", "gpu": "H200"}
    values["nodePool"]["instanceType"] = "p9.unknown"
    plan = make_plan(parse_stack_config(values))
    assert any("does not know how many GPUs" in p.message for p in plan.problems)


def test_the_llms_startup_budget_reads_the_whole_checkpoint_its_ranks_load_together() -> None:
    plan = _plan(tp=4)
    llm = plan.pairs[0].llm
    budget = llm.memory_plan.budget
    whole_mib = budget.weights_bytes * 4 / 2**20
    assert llm.probe.breakdown["read_weights"] == round(
        whole_mib / plan.config.storage.read_throughput_mib_per_s, 1
    )


def test_mps_over_a_tensor_parallel_group_is_refused_with_the_way_round() -> None:
    values = _values(tp=2)
    values["cluster"] = {**values["cluster"], "computeSharing": "mps"}
    plan = make_plan(parse_stack_config(values))
    (problem,) = [
        p for p in plan.problems if p.path == "colo:cluster.computeSharing" and "group" in p.message
    ]
    assert "pairs big" in problem.message and "computeSharing time-slice" in problem.message
