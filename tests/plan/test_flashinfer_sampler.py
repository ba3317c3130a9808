"""vllm.flashinferSampler: VLLM_USE_FLASHINFER_SAMPLER as a stack key, set in the server's environment and sized.

The sampler's top-k/top-p path decides the dummy sampler run vLLM profiles (colo/vllm/process/activation.py),
so turning FlashInfer off must change the plan the way an image without FlashInfer does, and turning it on
is only accepted where the release samples with FlashInfer by default and the image carries it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack


def _stack(version: str, **vllm: Any) -> dict[str, Any]:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["vllm"] = {"version": version, **vllm}
    raw["pairs"][0]["embedding"]["vllm"] = {"version": version}
    return raw


def _llm(raw: dict[str, Any]) -> Any:
    plan = make_plan(parse_stack_config(raw))
    assert plan.feasible, plan.problems
    return next(s for pair in plan.pairs for s in pair.servers if s.role == "llm")


@pytest.mark.parametrize("version", ["0.11.0", "0.22.0"])
def test_off_sets_the_variable_to_0_and_sizes_the_sampler_as_without_flashinfer(version: str) -> None:
    off = _llm(_stack(version, flashinferSampler=False))
    nofi = f"example.com/vllm:v{version}-nofi"
    without = _llm(_stack(version, image=nofi, build={"flashinfer": False}))
    default = _llm(_stack(version))
    assert ("VLLM_USE_FLASHINFER_SAMPLER", "0") in off.env
    assert not any(name == "VLLM_USE_FLASHINFER_SAMPLER" for name, _ in default.env)
    assert off.memory_plan.budget.activation_bytes == without.memory_plan.budget.activation_bytes
    if version == "0.11.0":  # FlashInfer's sampler by default there; PyTorch's sort without it
        assert off.memory_plan.budget.activation_bytes != default.memory_plan.budget.activation_bytes


def test_on_is_the_default_where_the_release_samples_with_flashinfer() -> None:
    on = _llm(_stack("0.22.0", flashinferSampler=True))
    assert ("VLLM_USE_FLASHINFER_SAMPLER", "1") in on.env
    assert (
        on.memory_plan.budget.activation_bytes == _llm(_stack("0.22.0")).memory_plan.budget.activation_bytes
    )


def test_on_is_refused_where_the_release_samples_without_flashinfer_by_default() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(_stack("0.19.1", flashinferSampler=True))
    (problem,) = refused.value.problems
    assert problem.path == "colo:pairs[0].llm.vllm" and "samples without FlashInfer" in problem.message


def test_on_is_refused_for_an_image_without_flashinfer() -> None:
    raw = _stack(
        "0.22.0", flashinferSampler=True, image="example.com/vllm:v0.22.0-nofi", build={"flashinfer": False}
    )
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(raw)
    assert "carries no FlashInfer" in refused.value.problems[0].message
