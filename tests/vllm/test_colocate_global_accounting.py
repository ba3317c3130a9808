"""Two servers on one GPU when the second runs a release that budgets globally (vLLM <= 0.9.0)."""

from __future__ import annotations

import re
from dataclasses import replace

from colo.vllm.colocate import GpuPlan, ServerRequest, plan_gpu
from colo.vllm.process.budget import size_process
from tests.vllm.helpers import process

GIB = 1024**3


def _pair(llm_version: str, llm_util: float | None) -> GpuPlan:
    embedder = process(
        "Qwen/Qwen3-Embedding-0.6B", "L40S", "0.11.1", max_model_len=8192, max_num_seqs=64, pooling=True
    )
    llm = process("Qwen/Qwen3-8B", "L40S", llm_version, max_model_len=16384, gpu_memory_utilization=llm_util)
    requests = [
        ServerRequest("embedding", "colo:pairs[0].embedding", embedder, "true", 2.0),
        ServerRequest("llm", "colo:pairs[0].llm", llm, "true", 1.0),
    ]
    return plan_gpu(llm.gpu, requests, 1024)


def test_a_derived_utilization_under_global_accounting_includes_the_earlier_server() -> None:
    plan = _pair("0.9.0", None)
    assert plan.feasible, plan.problems
    embedding, llm = plan.servers
    assert llm.budget.others_bytes == embedding.budget.footprint_bytes
    # util caps the whole device: the LLM's share counts the embedder's memory as well as its own
    total = plan.gpu.cuda_total_bytes
    assert llm.utilization * total >= embedding.budget.footprint_bytes + llm.budget.weights_bytes
    assert plan.free_bytes >= plan.safety_margin_bytes


def test_a_per_instance_release_derives_a_smaller_share_for_the_same_pair() -> None:
    global_plan = _pair("0.9.0", None)
    per_instance = _pair("0.9.1", None)
    assert per_instance.feasible, per_instance.problems
    assert per_instance.servers[1].utilization < global_plan.servers[1].utilization


def test_an_overridden_share_that_forgets_the_earlier_server_is_refused_with_the_cumulative_value() -> None:
    per_instance = _pair("0.9.1", 0.45)
    assert per_instance.feasible, per_instance.problems  # 0.45 of the GPU for the LLM alone fits beside
    plan = _pair("0.9.0", 0.45)
    assert not plan.feasible
    message = next(p.message for p in plan.problems if p.path == "colo:pairs[0].llm.maxModelLen")
    assert "budgets the whole GPU" in message and "cumulative" in message
    at_least = float(re.search(r"set it to at least (0\.\d+)", message).group(1))  # type: ignore[union-attr]
    retry = _pair("0.9.0", at_least)
    assert retry.feasible, retry.problems


def test_the_later_server_sees_the_earlier_one_only_through_the_free_memory_it_leaves() -> None:
    plan = _pair("0.9.0", None)
    llm = plan.servers[1].budget
    alone = replace(llm.spec, gpu_memory_utilization=llm.spec.utilization)
    on_empty_gpu = size_process(alone)
    assert on_empty_gpu.kv_bytes - llm.kv_bytes == plan.servers[0].budget.footprint_bytes
