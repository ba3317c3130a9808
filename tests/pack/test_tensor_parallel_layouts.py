"""pack may spread an LLM over the GPUs of one node (tensorParallelSize) when no single GPU of a type holds it,
and chooses such a layout when it is the cheapest that meets every minimum."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from colo.catalog.prices import price
from colo.errors import ModelsFileError
from colo.pack.engine import check_stack
from colo.pack.explain import pack
from colo.pack.requirements import load_pack_file
from colo.pack.solver import NodeType, Option, Programme, solve
from tests.pack.conftest import EMBEDDER, models_request, write_models

VLLM = {"version": "0.33.0"}
QWEN32 = {"model": "Qwen/Qwen3-32B", "maxModelLen": 32768, "vllm": VLLM}
EMBED = {**EMBEDDER, "vllm": VLLM}
RERANK = {"model": "Qwen/Qwen3-Reranker-0.6B", "maxModelLen": 8192, "vllm": VLLM}


def _written_llm(values: dict[str, Any]) -> dict[str, Any]:
    llm: dict[str, Any] = values["pairs"][0]["llm"]
    return llm


def test_an_llm_no_single_gpu_holds_is_packed_over_two_gpus_of_a_four_gpu_node() -> None:
    request = models_request([QWEN32], embeddings=[EMBED], rerankers=[RERANK], instanceFamilies=["g6e"])
    best = pack(request, alternatives=0).layouts[0]
    assert best.candidate.name == "g6e.12xlarge"
    assert _written_llm(best.values)["tensorParallelSize"] == 2
    assert best.packings[0].gpus == 2
    check = check_stack(best.values, request.region)
    assert check.feasible, check.problems
    assert check.pairs["qwen3-32b"].node_gpus == (0, 1)
    # the embedder and the reranker on a GPU each of the group
    assert [s.gpu for s in check.pairs["qwen3-32b"].servers] == [0, 1, None]


def test_the_cheapest_group_wins_and_single_gpu_types_say_how_many_gpus_it_needs() -> None:
    # at its whole context (40,960 tokens): at 32,768 the pair fits one H100's memory, and p5.4xlarge is
    # passed over for its node's CPU and memory instead
    qwen32_full = {**QWEN32, "maxModelLen": 40960}
    request = models_request(
        [qwen32_full], embeddings=[EMBED], rerankers=[RERANK], instanceFamilies=["g6e", "p5"]
    )
    result = pack(request, alternatives=1)
    best = result.layouts[0]
    group = price("us-east-1", "g6e.12xlarge")
    assert group is not None and best.usd_per_hour == pytest.approx(group.usd_per_hour)
    h100 = next(p for p in result.passed if p.instance == "p5.4xlarge")
    assert h100.reason.startswith("qwen3-32b on H100-SXM needs 2 GPUs of one node (tensorParallelSize 2)")
    assert "on 1: qwen3-32b on H100-SXM (llm.maxModelLen)" in h100.reason


def test_an_llm_one_gpu_holds_is_not_spread() -> None:
    request = models_request(
        [{"model": "Qwen/Qwen3-8B", "maxModelLen": 16384, "vllm": VLLM}],
        embeddings=[EMBED],
        instanceFamilies=["g6e"],
    )
    best = pack(request, alternatives=0).layouts[0]
    assert "tensorParallelSize" not in _written_llm(best.values)
    assert best.candidate.instance.gpus == 1


def test_a_group_size_the_models_file_sets_is_kept() -> None:
    request = models_request(
        [{**QWEN32, "tensorParallelSize": 4}], embeddings=[EMBED], instanceFamilies=["g6e"]
    )
    best = pack(request, alternatives=0).layouts[0]
    assert _written_llm(best.values)["tensorParallelSize"] == 4
    assert best.candidate.instance.gpus >= 4


@pytest.mark.parametrize("key", ["tensorParallelSize", "groupGpu"])
def test_a_companion_cannot_set_its_own_group_keys(key: str, tmp_path: Path) -> None:
    raw = {"llms": [QWEN32], "embeddings": [{**EMBED, key: 2 if key == "tensorParallelSize" else 1}]}
    with pytest.raises(ModelsFileError) as refused:
        load_pack_file(write_models(tmp_path / "models.yaml", raw))
    assert f"{key}: a companion runs on one GPU" in refused.value.render()


def _node(name: str, gpus: int, usd: float) -> NodeType:
    return NodeType(name, "L40S", gpus, usd, 45_000, gpus * 12_000, gpus * 96_000)


def _option(llm: int, gpus: int) -> Option:
    return Option(llm, 0, None, "L40S", 40_000 * gpus, 3_000, 26_000, gpus)


def test_the_solver_counts_a_groups_gpus_and_keeps_it_on_a_node_wide_enough() -> None:
    programme = Programme(
        llms=2,
        embeddings=1,
        reranker_replicas=(),
        spare_gpus=1,
        max_nodes=None,
        options=(_option(0, 2), _option(1, 1)),
        node_types=(_node("one", 1, 1.0), _node("four", 4, 5.0)),
    )
    choice = solve(programme, frozenset())
    assert choice is not None
    # one GPU a node cannot hold the pair of two GPUs, however cheap: 2 + 1 + 1 spare GPUs on one 4-GPU node
    assert choice.node_type.name == "four" and choice.nodes == 1
    wider = Programme(**{**programme.__dict__, "spare_gpus": 2})
    more = solve(wider, frozenset())
    assert more is not None and more.nodes == 2
