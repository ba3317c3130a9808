"""The field report's memory failures, replayed through colo's planner (shared/spec/field-report.md)."""

from __future__ import annotations

import json
import re

import pytest

from colo.catalog import GIB
from colo.config import StackConfig, parse_stack_config
from colo.plan.stack import make_plan
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.budget import ProcessBudget
from colo.vllm.process.kv_cache import kv_capacity, kv_geometry
from colo.vllm.process.weights import estimate_weights
from tests.plan.conftest import field_report_raw

# nvidia-smi after all pods ran, per GPU (field report, "Final measured state").
MEASURED_USED_MIB = {"qwen27b": 44_600, "qwen35b-moe": 44_322, "gemma31b": 44_398}


def test_embedding_008_plus_llm_092_fails_the_llms_startup_check_in_vllms_words() -> None:
    plan = make_plan(parse_stack_config(field_report_raw(llm_util=0.92)))
    assert not plan.feasible
    llm_problems = [p for p in plan.problems if p.path == "colo:pairs[0].llm.gpuMemoryUtilization"]
    assert len(llm_problems) == 1
    message = llm_problems[0].message
    assert "Free memory on device cuda:0" in message
    assert "(0.92, 40.84 GiB)" in message  # ceil(44.39 GiB x 0.92), as vLLM prints it
    suggested = float(re.search(r"set its utilization to at most (0\.\d+)", message).group(1))  # type: ignore[union-attr]
    # The suggested value is one that really works, contexts and safety margin included.
    retry = make_plan(parse_stack_config(field_report_raw(llm_util=suggested)))
    assert all(not p.path.startswith("colo:pairs[0].llm") for p in retry.problems), retry.problems


def test_embedding_008_plus_llm_087_passes_on_all_three_gpus(field_report: StackConfig) -> None:
    plan = make_plan(field_report)
    assert plan.feasible, plan.problems
    for pair in plan.pairs:
        assert all(s.memory_plan.budget.startup.ok for s in pair.servers)


@pytest.mark.parametrize("pair_name", sorted(MEASURED_USED_MIB))
def test_predicted_nvidia_smi_used_is_within_one_percent_of_the_report(
    field_report: StackConfig, pair_name: str
) -> None:
    plan = make_plan(field_report)
    pair = next(p for p in plan.pairs if p.name == pair_name)
    predicted_mib = pair.gpu_plan.used_bytes / 2**20
    assert predicted_mib == pytest.approx(MEASURED_USED_MIB[pair_name], rel=0.01)


def test_moe_weights_follow_total_parameters_not_active_ones() -> None:
    arch = catalog_architecture("Qwen/Qwen3.6-35B-A3B-FP8")
    weights = estimate_weights(arch)
    experts = weights.detail["experts"]
    assert arch.moe is not None and arch.moe.num_experts == 256
    # All 256 experts are resident: the experts alone are ~30 GiB in FP8, far above 3B "active" parameters.
    assert experts > 29 * GIB
    assert weights.bytes > 33 * GIB
    assert weights.parameters > 34e9


def _moe_budget(**llm: object) -> ProcessBudget:
    raw = field_report_raw()
    next(p for p in raw["pairs"] if "moe" in p["name"])["llm"].update(llm)
    plan = make_plan(parse_stack_config(raw))
    assert plan.feasible, plan.problems
    return next(p for p in plan.pairs if p.name == "qwen35b-moe").llm.memory_plan.budget


def test_moe_pair_kv_cache_is_tight_on_an_l40s(field_report: StackConfig) -> None:
    plan = make_plan(field_report)
    moe = next(p for p in plan.pairs if p.name == "qwen35b-moe").llm.memory_plan.budget
    assert moe.capacity is not None
    # the report: ~2.3 GB of KV cache; colo's figure sits below it since the weights count the M-RoPE cache at
    # 4 x max_position_embeddings rows (vLLM 0.20) and the allocator's blocks vLLM's own figure includes
    assert 1.4 * GIB < moe.kv_bytes < 3.5 * GIB


def test_the_reports_53k_tokens_lie_between_what_its_stated_settings_give_on_0200() -> None:
    # The report's settings (0.08 + 0.87, 32K, fp8 KV, MTP k=1, eager) with the vision tower built and its
    # encoder profiled (vLLM's defaults), built but not profiled (--skip-mm-profiling), or not built
    # (--language-model-only): none prints ~53K (52,800 = 25 x 2112 tokens); the report sits between them.
    default = _moe_budget()
    skipped = _moe_budget(skipMmProfiling=True)
    text_only = _moe_budget(languageModelOnly=True)
    assert default.capacity and skipped.capacity and text_only.capacity
    assert default.capacity.tokens < skipped.capacity.tokens < 52_800 < text_only.capacity.tokens
    assert (
        text_only.weights_bytes < default.weights_bytes
    )  # no vision weights: closer to the report's "~34 GB"


def test_from_0201_the_reports_kv_pool_would_print_about_149k_tokens_not_53k() -> None:
    # vllm 0.20.1 _report_kv_cache_config: int(max_concurrency * max_model_len). The ~2.3 GB pool that prints
    # 52,800 tokens under 0.20.0 (100 blocks of 4 groups x 2112 tokens) prints 148,945 there, so the report
    # ran 0.20.0 or older; its 0.92 default utilization and its checkpoint (0.17+) leave 0.20.0.
    arch = catalog_architecture("Qwen/Qwen3.6-35B-A3B-FP8")
    geometry = kv_geometry(arch, "fp8", num_speculative_tokens=1, mtp_draft_layers=arch.mtp_layers)
    assert geometry is not None
    pool = 100 * geometry.bytes_per_block

    def tokens(new_formula: bool) -> int:
        return kv_capacity(
            geometry,
            pool,
            max_model_len=32768,
            max_num_batched_tokens=2048,
            num_speculative_tokens=1,
            tokens_from_concurrency=new_formula,
        ).tokens

    assert tokens(False) == 52_800
    assert tokens(True) == 148_945


def test_moe_graph_phase_does_not_fit_at_087_when_graphs_are_outside_the_budget() -> None:
    raw = field_report_raw(moe_eager=False)
    for pair in raw["pairs"]:
        for role in ("embedding", "llm"):
            pair[role]["vllm"] = {"version": "0.19.1"}  # graphs captured outside util before 0.20
    plan = make_plan(parse_stack_config(raw))
    moe = next(p for p in plan.pairs if p.name == "qwen35b-moe").llm.memory_plan
    assert moe.graph_decision != "captured (default sizes)"
    assert any("do not fit" in note for note in moe.notes)


def test_when_nothing_but_eager_fits_the_plan_says_so_with_the_decode_cost() -> None:
    raw = field_report_raw(moe_eager=False, llm_util=0.87)
    moe_pair = next(p for p in raw["pairs"] if "moe" in p["name"])
    moe_pair["llm"]["vllm"] = {"version": "0.19.1"}
    moe_pair["embedding"]["vllm"] = {"version": "0.19.1"}
    moe_pair["embedding"]["gpuMemoryUtilization"] = (
        0.102  # a little over two points more for the embedding: no room even for four graph sizes
    )
    plan = make_plan(parse_stack_config(raw))
    moe = next(p for p in plan.pairs if p.name == "qwen35b-moe").llm.memory_plan
    assert moe.graph_decision == "eager (fallback)"
    assert any("TPOT 88 ms eager against 55 ms with graphs, +60%" in note for note in moe.notes)


def test_reduced_capture_sizes_reach_vllm_as_one_valid_json_argument() -> None:
    raw = field_report_raw()
    raw["pairs"][0]["llm"]["cudagraphCaptureSizes"] = [1, 2, 4, 8]
    plan = make_plan(parse_stack_config(raw))
    args = list(plan.pairs[0].llm.args)
    value = args[args.index("--compilation-config") + 1]
    assert json.loads(value) == {"cudagraph_capture_sizes": [1, 2, 4, 8]}


def test_derived_utilizations_leave_the_stated_margin_on_every_gpu() -> None:
    plan = make_plan(parse_stack_config(field_report_raw(embedding_util=None, llm_util=None)))
    assert plan.feasible, plan.problems
    for pair in plan.pairs:
        assert pair.gpu_plan.free_bytes >= pair.gpu_plan.safety_margin_bytes
        # The LLM takes what contexts, graphs and the margin leave: colo arrives, from the arithmetic alone,
        # at the operating point the report reached by trial and error.
        assert pair.gpu_plan.free_bytes < pair.gpu_plan.safety_margin_bytes + 64 * 2**20
        assert pair.gpu_plan.used_bytes / 2**20 == pytest.approx(MEASURED_USED_MIB[pair.name], rel=0.01)


def test_when_the_embedder_already_holds_the_gpu_no_negative_utilization_is_suggested() -> None:
    """An embedder at 0.97 leaves the LLM nothing; the fix names the servers before it, never a value below 0."""
    plan = make_plan(parse_stack_config(field_report_raw(embedding_util=0.97, llm_util=0.5)))
    messages = [p.message for p in plan.problems if p.path.startswith("colo:pairs[0].llm")]
    assert messages
    assert not any(re.search(r"at most -", m) for m in messages)
    assert any("the servers started before it already hold the GPU" in m for m in messages)
