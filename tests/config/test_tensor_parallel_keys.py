"""The keys of a tensor-parallel pair: the LLM's group size, where each companion runs, and how the group is
balanced; each refusal names the key to change."""

from __future__ import annotations

from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.roles import Role


def _raw(llm: dict[str, Any] | None = None, **pair: Any) -> dict[str, Any]:
    return {
        "pairs": [
            {
                "name": "big",
                "llm": {"model": "Qwen/Qwen3-32B", **(llm or {})},
                "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B"},
                "reranker": {"model": "Qwen/Qwen3-Reranker-0.6B"},
                **pair,
            }
        ]
    }


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    return {problem.path: problem.message for problem in caught.value.problems}


@pytest.mark.parametrize("size", [1, 2, 4, 8])
def test_an_llm_spans_one_two_four_or_eight_gpus(size: int) -> None:
    pair = parse_stack_config(_raw({"tensorParallelSize": size})).pairs[0]
    assert pair.tensor_parallel_size == size


@pytest.mark.parametrize("size", [0, 3, 6, 16])
def test_other_group_sizes_are_refused_with_the_sizes_colo_plans(size: int) -> None:
    message = _problems(_raw({"tensorParallelSize": size}))["colo:pairs[0].llm.tensorParallelSize"]
    assert "1, 2, 4 or 8" in message or "greater than" in message


def test_companions_take_the_groups_gpus_one_each_in_start_order() -> None:
    pair = parse_stack_config(_raw({"tensorParallelSize": 4})).pairs[0]
    assert pair.group_gpus() == {Role.EMBEDDING: 0, Role.RERANKER: 1}
    assert pair.rank_balance == "equalize"


def test_group_gpu_places_a_companion_and_more_companions_than_gpus_wrap_around() -> None:
    placed = _raw({"tensorParallelSize": 2})
    placed["pairs"][0]["reranker"]["groupGpu"] = 0
    assert parse_stack_config(placed).pairs[0].group_gpus() == {Role.EMBEDDING: 0, Role.RERANKER: 0}
    assert parse_stack_config(_raw()).pairs[0].group_gpus() == {Role.EMBEDDING: 0, Role.RERANKER: 0}


def test_only_the_llm_spans_gpus() -> None:
    raw = _raw({"tensorParallelSize": 2})
    raw["pairs"][0]["embedding"]["tensorParallelSize"] = 2
    message = _problems(raw)["colo:pairs[0].embedding.tensorParallelSize"]
    assert "only the LLM spans GPUs" in message and "groupGpu" in message


def test_the_llm_takes_no_group_gpu() -> None:
    message = _problems(_raw({"tensorParallelSize": 2, "groupGpu": 1}))["colo:pairs[0].llm.groupGpu"]
    assert "every GPU of its group" in message


def test_a_group_gpu_outside_the_group_is_refused() -> None:
    raw = _raw({"tensorParallelSize": 2})
    raw["pairs"][0]["reranker"]["groupGpu"] = 2
    assert "numbered 0 to 1" in _problems(raw)["colo:pairs[0].reranker.groupGpu"]
    single = _raw()
    single["pairs"][0]["reranker"]["groupGpu"] = 1
    assert "no group" in _problems(single)["colo:pairs[0].reranker.groupGpu"]


def test_rank_balance_without_a_group_is_refused_rather_than_ignored() -> None:
    assert "tensorParallelSize 1" in _problems(_raw(rankBalance="refuse"))["colo:pairs[0].rankBalance"]
    pair = parse_stack_config(_raw({"tensorParallelSize": 2}, rankBalance="refuse")).pairs[0]
    assert pair.rank_balance == "refuse"
    assert (
        "input should be"
        in _problems(_raw({"tensorParallelSize": 2}, rankBalance="even"))["colo:pairs[0].rankBalance"].lower()
    )


def test_tensor_parallel_size_in_extra_args_points_at_the_key() -> None:
    message = _problems(_raw({"extraArgs": ["--tensor-parallel-size", "2"]}))[
        "colo:pairs[0].llm.extraArgs[0]"
    ]
    assert "tensorParallelSize" in message
