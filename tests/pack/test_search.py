"""pack's answers: the field report at or below 3 x g6e.xlarge, every minimum met, nothing cheaper left
unexplained, and what cannot be met named by model and minimum."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog.prices import price
from colo.cli.common import load_config
from colo.pack import search as search_module
from colo.pack.candidates import candidates
from colo.pack.engine import check_stack
from colo.pack.explain import PackInfeasibleError, pack
from colo.pack.packings import Refusal, evaluate
from colo.pack.requirements import PackRequest, request_from_stack
from colo.pack.search import Search
from colo.stackfiles import load_stack
from tests.pack.conftest import EMBEDDER, VLLM, models_request

GEMMA = {"model": "google/gemma-4-31B-it-FP8", "maxModelLen": 16384, "vllm": VLLM}


def test_the_field_report_costs_at_most_three_l40s_nodes(field_report: PackRequest) -> None:
    result = pack(field_report, alternatives=1)
    report = price("us-east-1", "g6e.xlarge")
    assert report is not None
    best = result.layouts[0]
    assert best.usd_per_hour <= 3 * report.usd_per_hour + 1e-9
    # Anything cheaper than the report's three L40S nodes is passed over with the plan's reason.
    for passed in result.passed:
        assert passed.usd_per_hour < best.usd_per_hour
        assert passed.reason


def test_every_layout_meets_every_minimum_and_the_plan_accepts_it(field_report: PackRequest) -> None:
    result = pack(field_report, alternatives=2)
    for layout in result.layouts:
        check = check_stack(layout.values, field_report.region)
        assert check.feasible, check.problems
        for llm in field_report.llms:
            assert check.pairs[llm.name].llm.concurrency >= llm.min_concurrency


def test_cheaper_instance_types_that_cannot_hold_a_pair_say_which_pair_and_why(
    field_report: PackRequest,
) -> None:
    result = pack(field_report, alternatives=0)
    l4 = next(p for p in result.passed if p.instance == "g6.xlarge")
    # one L4 is too small for it; a tensor-parallel group of them would do, on a wider node
    assert l4.reason.startswith("qwen27b on L4 needs 4 GPUs of one node (tensorParallelSize 4)")
    assert "more than a node of g6.xlarge has (1); on 2: qwen27b on L4 (llm." in l4.reason


def test_a_read_write_once_volume_keeps_pairs_on_one_node_and_the_saving_is_noted() -> None:
    request = request_from_stack(load_config(load_stack("prod")), "stack prod")
    result = pack(request, alternatives=0)
    best = result.layouts[0]
    assert best.nodes == 1
    assert any("ReadWriteMany" in note for note in result.notes)
    assert result.current is not None
    assert best.usd_per_hour <= result.current.usd_per_hour + 1e-9


def _wanting(request: PackRequest, name: str, concurrency: float) -> PackRequest:
    return replace(
        request,
        llms=tuple(
            replace(llm, min_concurrency=concurrency) if llm.name == name else llm for llm in request.llms
        ),
    )


def test_a_minimum_the_plan_s_graphs_miss_is_met_by_writing_the_graph_setting(
    field_report: PackRequest,
) -> None:
    l40s = replace(field_report, families=("g6e",))
    planned = pack(l40s, alternatives=0).layouts[0].check.pairs["gemma31b"].llm
    assert planned.graphs == "default"  # the default graphs fit beside the embedder
    reduced = pack(_wanting(l40s, "gemma31b", planned.concurrency + 0.01), alternatives=0).layouts[0]
    written = next(p for p in reduced.values["pairs"] if p["name"] == "gemma31b")["llm"]
    assert written["cudagraphCaptureSizes"] == [1, 2, 4, 8] and "enforceEager" not in written
    fewer = reduced.check.pairs["gemma31b"].llm
    assert fewer.concurrency >= planned.concurrency + 0.01
    eager = pack(_wanting(l40s, "gemma31b", fewer.concurrency + 0.01), alternatives=0).layouts[0]
    written = next(p for p in eager.values["pairs"] if p["name"] == "gemma31b")["llm"]
    assert written["enforceEager"] is True
    assert eager.check.pairs["gemma31b"].llm.concurrency >= fewer.concurrency + 0.01


def test_an_unreachable_concurrency_names_the_model_and_the_minimum() -> None:
    request = models_request([{**GEMMA, "minConcurrency": 10_000}], instanceFamilies=["g6e", "g7e"])
    with pytest.raises(PackInfeasibleError) as error:
        pack(request)
    text = error.value.render()
    assert "google/gemma-4-31B-it-FP8" in text
    assert "minConcurrency 10000" in text


def test_a_context_no_gpu_holds_names_the_model_and_max_model_len() -> None:
    request = models_request([{**GEMMA, "maxModelLen": 262144}], instanceFamilies=["g6"])
    with pytest.raises(PackInfeasibleError) as error:
        pack(request)
    assert "maxModelLen" in error.value.render()
    assert "google/gemma-4-31B-it-FP8" in error.value.render()


def test_planning_gpu_models_lazily_gives_the_layouts_planning_them_all_gives(
    field_report: PackRequest,
) -> None:
    request = replace(field_report, families=("g6", "g6e", "g7e", "p4d"))
    lazy = Search(request, candidates(request))
    eager = Search(request, candidates(request))
    eager.evaluate_all()
    assert len(lazy.evaluated) == 0
    found = [(x.candidate.name, x.nodes, x.values) for x in lazy.layouts(2)]
    assert found == [(x.candidate.name, x.nodes, x.values) for x in eager.layouts(2)]
    assert lazy.evaluated < eager.evaluated  # the 8 x A100-40GB node could not have been cheaper


def test_companions_skipped_unplanned_are_ones_the_plan_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    # on one GPU (a larger group would hold the 31B model on L4s: see the tensor-parallel tests)
    request = models_request(
        [
            {**GEMMA, "maxModelLen": 32768, "tensorParallelSize": 1},
            {"model": "Qwen/Qwen3-8B", "maxModelLen": 32768, "tensorParallelSize": 1, "vllm": VLLM},
        ],
        embeddings=[EMBEDDER, {"model": "BAAI/bge-m3", "maxModelLen": 8192, "vllm": VLLM}],
        rerankers=[{"model": "Qwen/Qwen3-Reranker-0.6B", "maxModelLen": 8192, "vllm": VLLM}],
        instanceFamilies=["g6"],
    )
    planned: list[object] = []
    monkeypatch.setattr(search_module, "evaluate", lambda *args: planned.append(args) or evaluate(*args))
    search = Search(request, candidates(request))
    search.evaluate_gpu("L4")
    assert len(planned) < len(search.refusals)  # some were skipped...
    for (index, companions, gpu_name), refusal in search.refusals.items():
        assert isinstance(evaluate(request, index, companions, gpu_name), Refusal), refusal  # ...rightly
