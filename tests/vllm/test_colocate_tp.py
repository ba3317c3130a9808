"""A tensor-parallel LLM over the GPUs of its group, its companions spread over the same GPUs.

Every rank checks the free memory of its own GPU, the utilization is one flag for all ranks, and the engine keeps
the smallest pool of all ranks: the fullest GPU sizes the LLM, and what an emptier GPU keeps beyond it is either
handed to its companion (equalize), refused, or said to idle.
"""

from __future__ import annotations

from math import floor

from colo.catalog import GIB
from colo.roles import Role
from colo.vllm.colocate import UTIL_STEP, ServerRequest, restart_problems
from colo.vllm.colocate_tp import GroupPlan, GroupRequest, RankBalance, plan_group
from tests.vllm.helpers import process

PATH = "colo:pairs[0]"


def _group(
    version: str = "0.33.0",
    gpu: str = "H100-SXM",
    *,
    tp: int = 2,
    balance: RankBalance = "equalize",
    placement: tuple[int, int] = (0, 1),
    llm_util: float | None = None,
) -> GroupPlan:
    embedder = process(
        "Qwen/Qwen3-Embedding-0.6B", gpu, version, max_model_len=8192, max_num_seqs=64, pooling=True
    )
    reranker = process(
        "Qwen/Qwen3-Reranker-0.6B", gpu, version, max_model_len=4096, max_num_seqs=64, pooling=True
    )
    llm = process(
        "Qwen/Qwen3-32B",
        gpu,
        version,
        max_model_len=32768,
        tensor_parallel_size=tp,
        gpu_memory_utilization=llm_util,
    )
    request = GroupRequest(
        PATH,
        ServerRequest(Role.LLM, f"{PATH}.llm", llm, "auto", 1.0),
        (
            (ServerRequest(Role.EMBEDDING, f"{PATH}.embedding", embedder, "auto", 2.0), placement[0]),
            (ServerRequest(Role.RERANKER, f"{PATH}.reranker", reranker, "auto", 2.0), placement[1]),
        ),
        balance,
    )
    return plan_group(llm.gpu, request, 1024)


def _companions_on(plan: GroupPlan, k: int) -> int:
    return sum(s.budget.footprint_bytes for s in plan.gpus[k].servers[:-1])


def test_every_rank_finds_what_the_companions_of_its_own_gpu_left() -> None:
    plan = _group(balance="refuse")
    total = plan.gpu.cuda_total_bytes
    for k, gpu in enumerate(plan.gpus):
        rank = gpu.servers[-1].budget
        assert rank.spec.tensor_parallel_size == 2
        assert rank.startup.free_bytes == total - _companions_on(plan, k) - rank.context_bytes
    # the embedder's 8K context needs more than the reranker's 4K: GPU 0 is the fuller one, and sizes the LLM
    assert _companions_on(plan, 0) > _companions_on(plan, 1)
    assert plan.binding == 0


def test_one_utilization_for_every_rank_and_the_same_pool_on_each() -> None:
    plan = _group()
    ranks = [gpu.servers[-1].budget for gpu in plan.gpus]
    assert len({r.spec.utilization for r in ranks}) == 1
    assert len({r.kv_bytes for r in ranks}) == 1
    assert plan.llm.budget.kv_bytes == ranks[0].kv_bytes
    assert plan.feasible, plan.problems


def test_equalize_hands_the_emptier_gpus_difference_to_its_companion() -> None:
    refused, equalized = _group(balance="refuse"), _group(balance="equalize")
    reranker_before = refused.gpus[1].servers[0]
    reranker_after = equalized.gpus[1].servers[0]
    assert reranker_after.utilization > reranker_before.utilization
    assert reranker_after.budget.kv_bytes > reranker_before.budget.kv_bytes
    assert any("rankBalance: equalize" in note for note in reranker_after.notes)
    step = equalized.gpu.cuda_total_bytes // UTIL_STEP
    assert max(equalized.idle_bytes) < step
    # the LLM's slice did not move: the fullest GPU's companions are the same
    assert equalized.llm.budget.kv_bytes == refused.llm.budget.kv_bytes
    assert equalized.feasible, equalized.problems


def test_refuse_names_the_idle_gpu_and_the_ways_out() -> None:
    plan = _group(balance="refuse")
    assert not plan.feasible
    (problem,) = plan.problems
    assert problem.path == f"{PATH}.rankBalance"
    assert "GPU 1" in problem.message
    assert "groupGpu" in problem.message and "rankBalance: equalize" in problem.message
    assert plan.idle_bytes[1] > 0.5 * GIB


def test_a_gpu_without_a_companion_keeps_its_difference_idle_and_the_plan_says_so() -> None:
    plan = _group(tp=4)
    assert plan.feasible, plan.problems
    assert [len(gpu.servers) for gpu in plan.gpus] == [2, 2, 1, 1]
    assert all(plan.idle_bytes[k] > 3 * GIB for k in (2, 3))
    (note,) = plan.notes
    assert "GPU 2" in note and "GPU 3" in note and "groupGpu" in note
    refused = _group(tp=4, balance="refuse")
    assert [p.path for p in refused.problems] == [f"{PATH}.rankBalance"]


def test_both_companions_on_one_gpu_make_it_the_fullest_and_the_other_gpu_idles() -> None:
    plan = _group(placement=(1, 1))
    assert plan.binding == 1
    assert [len(gpu.servers) for gpu in plan.gpus] == [1, 3]
    assert plan.companion_gpus == (1, 1)
    assert plan.idle_bytes[0] > 3 * GIB and plan.notes


def test_the_pair_servers_are_in_start_order_with_the_llm_last() -> None:
    plan = _group()
    assert [s.role for s in plan.servers] == [Role.EMBEDDING, Role.RERANKER, Role.LLM]
    assert plan.companion_gpus == (0, 1)


def test_an_override_that_only_the_emptier_gpu_can_hold_is_refused_on_the_fullest() -> None:
    derived = _group(balance="refuse")
    free = [gpu.servers[-1].budget.startup.free_bytes for gpu in derived.gpus]
    assert free[1] - free[0] > 0.5 * GIB
    # a request between what the rank on the fullest GPU finds free and what the other one finds
    override = floor((free[0] + free[1]) / 2 / derived.gpu.cuda_total_bytes * UTIL_STEP) / UTIL_STEP
    plan = _group(llm_util=override, balance="refuse")
    startup = [p for p in plan.problems if p.path == f"{PATH}.llm.gpuMemoryUtilization"]
    assert startup, plan.problems
    assert all(p.message.startswith("(GPU 0 of the group)") for p in startup)
    assert plan.gpus[0].servers[-1].budget.startup.ok is False
    assert plan.gpus[1].servers[-1].budget.startup.ok is True


def test_under_vllm_0_34_every_rank_sizes_its_pool_from_its_request_and_can_restart_into_its_slot() -> None:
    plan = _group("0.34.0", tp=4)
    assert plan.feasible, plan.problems
    for gpu in plan.gpus:
        rank = gpu.servers[-1].budget
        assert rank.measured is not None and rank.measured.bound == "requested"
        assert restart_problems(gpu) == []
    assert len({gpu.servers[-1].budget.kv_bytes for gpu in plan.gpus}) == 1


def test_under_global_accounting_the_engine_keeps_the_smallest_pool_of_all_ranks() -> None:
    plan = _group("0.8.5", "L40S", tp=4, balance="refuse")
    pools = [gpu.servers[-1].budget.kv_bytes for gpu in plan.gpus]
    # the request covers every process on the GPU, so a rank beside no companion would size a larger pool
    assert pools[2] > pools[0]
    assert plan.llm.budget.kv_bytes == min(pools)
    assert plan.idle_bytes[2] == pools[2] - min(pools)
