"""Servers on one GPU when vLLM sizes each pool after warm-up (0.34+): no startup refusal, a cap per server.

vLLM 0.34 no longer refuses a request beyond the free memory, and a server left unset takes the whole card,
so colo's derived utilizations and its refusals are the only guard: every server gets its pool from its own
request, and any one of them restarted alone beside the others finds its slot again.
"""

from __future__ import annotations

from colo.catalog import GIB
from colo.roles import Role
from colo.vllm.colocate import GpuPlan, ServerRequest, plan_gpu, restart_problems
from colo.vllm.process.budget import size_process
from tests.vllm.helpers import process

VERSION = "0.34.0"


def _pair(
    gpu: str = "H100-SXM",
    *,
    embedding_util: float | None = None,
    llm_util: float | None = None,
    pin_kv: bool = False,
    llm: str = "Qwen/Qwen3-8B",
    max_model_len: int = 32768,
) -> GpuPlan:
    embedder = process(
        "Qwen/Qwen3-Embedding-0.6B",
        gpu,
        VERSION,
        max_model_len=8192,
        max_num_seqs=64,
        pooling=True,
        gpu_memory_utilization=embedding_util,
    )
    server = process(llm, gpu, VERSION, max_model_len=max_model_len, gpu_memory_utilization=llm_util)
    requests = [
        ServerRequest(Role.EMBEDDING, "colo:pairs[0].embedding", embedder, "auto", 2.0, pin_kv),
        ServerRequest(Role.LLM, "colo:pairs[0].llm", server, "auto", 1.0, pin_kv),
    ]
    return plan_gpu(server.gpu, requests, 1024)


def test_derived_utilizations_size_every_pool_from_its_own_request() -> None:
    for gpu in ("L40S", "H100-SXM", "H200"):
        plan = _pair(gpu)
        assert plan.feasible, plan.problems
        for server in plan.servers:
            assert server.budget.measured is not None
            assert server.budget.measured.bound == "requested"


def test_the_gpu_keeps_every_servers_vllm_margin_free_so_each_can_restart_into_its_slot() -> None:
    plan = _pair("H100-SXM")
    embedding, llm = (s.budget for s in plan.servers)
    assert embedding.measured is not None and llm.measured is not None
    # the LLM's transient makes its margin larger than vLLM's 1 GiB floor; its request leaves that margin free
    # at its own snapshot (before it grows under load), the earlier server's margin stays free even then
    assert llm.measured.margin_bytes > 1 * GIB
    assert llm.measured.free_seen_bytes - llm.requested_bytes >= llm.measured.margin_bytes
    assert plan.free_bytes >= embedding.measured.margin_bytes
    assert restart_problems(plan) == []


def test_a_restarted_companion_gets_exactly_its_planned_pool_beside_the_running_llm() -> None:
    plan = _pair("L40S")
    embedding, llm = plan.servers
    beside_llm = plan.gpu.cuda_total_bytes - llm.budget.footprint_bytes
    again = size_process(embedding.budget.spec, free_before_bytes=beside_llm)
    assert again.measured is not None and again.measured.bound == "requested"
    assert again.kv_bytes == embedding.budget.kv_bytes
    assert again.capacity is not None and embedding.budget.capacity is not None
    assert again.capacity.tokens == embedding.budget.capacity.tokens


def test_an_llm_request_beyond_what_it_finds_free_is_refused_although_vllm_would_start_it() -> None:
    plan = _pair("L40S", llm_util=0.95)
    assert not plan.feasible
    problem = plan.problems[0]
    assert problem.path == "colo:pairs[0].llm.gpuMemoryUtilization"
    assert "would start this server without a refusal" in problem.message
    assert "sizes its KV cache from that" in problem.message
    assert "set its utilization to at most 0.8" in problem.message


def test_overrides_that_leave_no_room_for_a_restart_are_refused_with_the_pool_a_restart_would_get() -> None:
    # Each start is fine in order (the embedder first on an empty card, the LLM within what it finds), but the
    # embedder's request was sized on an empty card: beside the running LLM it would not find its slot.
    derived = _pair("L40S")
    llm_util = derived.servers[1].budget.spec.utilization
    plan = _pair("L40S", embedding_util=0.12, llm_util=llm_util - 0.02)
    messages = [p.message for p in plan.problems]
    assert any("would not restart into its own slot" in m for m in messages), messages


def test_pinning_keeps_the_pool_vllm_would_measure_and_passes_it_as_kv_cache_memory_bytes() -> None:
    measured = _pair("H100-SXM")
    pinned = _pair("H100-SXM", pin_kv=True)
    assert pinned.feasible, pinned.problems
    for before, after in zip(measured.servers, pinned.servers, strict=True):
        assert after.budget.sizing == "pinned"
        assert after.budget.spec.kv_cache_memory_bytes == before.budget.kv_bytes
        assert after.budget.spec.utilization == before.budget.spec.utilization  # the startup check is back
        assert after.budget.startup.ok


def test_a_server_on_a_shared_gpu_says_why_its_utilization_is_set_and_which_vllm_warning_to_expect() -> None:
    plan = _pair("H100-SXM")
    llm = plan.servers[1]
    assert any("a server left unset would take the whole card (1.0)" in n for n in llm.notes)
    assert any("vLLM will warn that gpu_memory_utilization=" in n for n in llm.notes)


def test_a_reduced_capture_fallback_states_its_decode_cost() -> None:
    # Qwen3-32B in FP8 on an L40S at 12K leaves too little beside its pool for the default capture sizes
    plan = _pair("L40S", llm="Qwen/Qwen3-32B-FP8", max_model_len=12288)
    llm = plan.servers[1]
    assert llm.graph_decision == "captured (reduced sizes [1, 2, 4, 8])"
    (fallback,) = [n for n in llm.notes if "do not fit" in n]
    assert "decode batches above 8 sequences replay no CUDA graph" in fallback
    assert "+60%" in fallback


def test_a_model_whose_weights_do_not_fit_gets_no_graph_notes() -> None:
    plan = _pair("L40S", llm="Qwen/Qwen3-30B-A3B", max_model_len=4096)
    assert not plan.feasible
    assert not [n for n in plan.servers[1].notes if "CUDA graphs" in n or "eager" in n]


def test_two_refusals_of_the_same_server_suggest_the_same_utilization() -> None:
    suggestions = set()
    for util in (0.9, 0.95):
        plan = _pair("L40S", llm_util=util)
        (problem,) = [p for p in plan.problems if p.path.endswith("llm.gpuMemoryUtilization")][:1]
        suggestions.add(problem.message.split("set its utilization to at most ")[1][:5])
    assert len(suggestions) == 1, suggestions
