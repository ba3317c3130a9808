"""Properties of pack on small random requests: every layout it returns passes `colo plan`; relaxing a
minimum never raises the cost; allowing one more instance family never raises it."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colo.cli.common import load_config
from colo.cli.plan_cmd import build_plan
from colo.pack.explain import PackInfeasibleError, PackResult, pack
from colo.pack.requirements import PackRequest
from colo.pack.stackfile import stack_text
from colo.stackfiles import load_stack_file
from tests.pack.conftest import VLLM, models_request

MODELS = (
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-8B-FP8",
    "Qwen/Qwen3-14B",
    "Qwen/Qwen3-32B-FP8",
    "google/gemma-4-31B-it-FP8",
)
FAMILIES = ("g4dn", "g5", "g6", "g6e", "g7e")
PROPERTY = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def llms(draw: st.DrawFn) -> dict[str, Any]:
    llm: dict[str, Any] = {
        "model": draw(st.sampled_from(MODELS)),
        "maxModelLen": draw(st.sampled_from([4096, 8192, 16384, 32768])),
        "minConcurrency": draw(st.sampled_from([1, 2, 4, 8])),
        "vllm": VLLM,
    }
    if draw(st.booleans()):
        llm["kvCacheDtype"] = "fp8"
    if draw(st.booleans()):
        llm["minKvTokens"] = draw(st.sampled_from([8192, 32768, 131072]))
    return llm


@st.composite
def requests(draw: st.DrawFn) -> PackRequest:
    families = draw(st.lists(st.sampled_from(FAMILIES), min_size=1, max_size=3, unique=True))
    storage = draw(st.sampled_from(["ReadWriteOnce", "ReadWriteMany"]))
    return models_request(
        draw(st.lists(llms(), min_size=1, max_size=2)),
        instanceFamilies=families,
        spareGpus=draw(st.integers(0, 1)),
        stack={"storage": {"accessMode": storage}},
    )


def _cost(request: PackRequest) -> float | None:
    try:
        return pack(request, alternatives=0).layouts[0].usd_per_hour
    except PackInfeasibleError:
        return None


def _plans_cleanly(result: PackResult) -> None:
    with tempfile.TemporaryDirectory() as directory:
        for rank, layout in enumerate(result.layouts):
            path = Path(directory) / f"Pulumi.packed-{rank}.yaml"
            path.write_text(stack_text(layout, result.request.region, result.request.origin))
            plan = build_plan(load_config(load_stack_file(path)))
            assert plan.feasible, plan.problems
            for llm in result.request.llms:
                figures = next(p for p in plan.pairs if p.name == llm.name).llm.memory_plan.budget.capacity
                assert figures is not None
                assert figures.max_concurrency >= llm.min_concurrency
                assert llm.min_kv_tokens is None or figures.tokens >= llm.min_kv_tokens


@PROPERTY
@given(requests())
def test_every_layout_pack_returns_passes_colo_plan_and_meets_every_minimum(request: PackRequest) -> None:
    try:
        result = pack(request, alternatives=1)
    except PackInfeasibleError:
        return
    _plans_cleanly(result)


@PROPERTY
@given(requests(), st.data())
def test_relaxing_a_minimum_never_raises_the_cost(request: PackRequest, data: st.DataObject) -> None:
    cost = _cost(request)
    index = data.draw(st.integers(0, len(request.llms) - 1))
    llm = request.llms[index]
    relaxed_llm = replace(
        llm,
        min_concurrency=data.draw(st.sampled_from([1.0, llm.min_concurrency / 2, llm.min_concurrency])),
        min_kv_tokens=data.draw(st.sampled_from([None, llm.min_kv_tokens])),
    )
    relaxed = replace(
        request, llms=tuple(relaxed_llm if i == index else x for i, x in enumerate(request.llms))
    )
    relaxed_cost = _cost(relaxed)
    if cost is not None:
        assert relaxed_cost is not None
        assert relaxed_cost <= cost + 1e-9


@PROPERTY
@given(requests(), st.sampled_from(FAMILIES))
def test_allowing_another_instance_family_never_raises_the_cost(request: PackRequest, family: str) -> None:
    assert request.families is not None
    cost = _cost(request)
    wider = replace(request, families=tuple(sorted({*request.families, family})))
    wider_cost = _cost(wider)
    if cost is not None:
        assert wider_cost is not None
        assert wider_cost <= cost + 1e-9
