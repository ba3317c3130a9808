"""What pack is asked: a models file or a stack, read into one request; invalid files refused per key."""

from __future__ import annotations

from pathlib import Path

import pytest

from colo.cli.common import load_config
from colo.errors import ModelsFileError
from colo.pack.requirements import PackRequest, load_pack_file, request_from_stack
from colo.stackfiles import load_stack
from tests.pack.conftest import EMBEDDER, VLLM, models_request, write_models

LLM = {"model": "Qwen/Qwen3.6-27B-FP8", "maxModelLen": 32768, "vllm": VLLM}


def test_a_models_file_keeps_each_server_as_its_stack_values(field_report: PackRequest) -> None:
    names = [llm.name for llm in field_report.llms]
    assert names == ["qwen27b", "qwen35b-moe", "gemma31b"]
    moe = field_report.llms[1].server
    assert moe["kvCacheDtype"] == "fp8"
    assert moe["speculative"] == {"method": "mtp", "numSpeculativeTokens": 1}
    assert "minConcurrency" not in moe  # a pack key, not a server key
    assert field_report.embeddings[0].server == EMBEDDER


def test_pair_names_come_from_model_ids_when_not_given_and_stay_unique() -> None:
    request = models_request([LLM, LLM])
    assert [llm.name for llm in request.llms] == ["qwen3-6-27b-fp8", "qwen3-6-27b-fp8-2"]


def test_the_written_budget_holds_the_largest_companion_minimum_and_the_smallest_llm_minimum() -> None:
    request = models_request(
        [{**LLM, "minConcurrency": 3}, {**LLM, "minConcurrency": 1.5}],
        embeddings=[{**EMBEDDER, "minConcurrency": 4}],
        rerankers=[{"model": "BAAI/bge-reranker-v2-m3", "vllm": VLLM, "minConcurrency": 1}],
    )
    budget = request.stack_budget()
    assert (budget["embeddingConcurrency"], budget["llmMinConcurrency"]) == (4, 1.5)


@pytest.mark.parametrize(
    ("llm", "where", "says"),
    [
        ({k: v for k, v in LLM.items() if k != "maxModelLen"}, "llms[0].maxModelLen", "required"),
        ({k: v for k, v in LLM.items() if k != "vllm"}, "llms[0].vllm", "required"),
        ({**LLM, "gpuMemoryUtilization": 0.8}, "llms[0]", "gpuMemoryUtilization is derived"),
        ({**LLM, "minConcurrency": 0}, "llms[0].minConcurrency", "greater than 0"),
        ({**LLM, "embedding": "not/listed"}, "test.yaml", "which embeddings does not list"),
        ({**LLM, "maxModelLen": "long"}, "llms[0].maxModelLen", "integer"),
    ],
)
def test_an_invalid_llm_entry_is_refused_naming_its_key(
    tmp_path: Path, llm: dict[str, object], where: str, says: str
) -> None:
    path = write_models(tmp_path / "test.yaml", {"llms": [llm], "embeddings": [EMBEDDER]})
    with pytest.raises(ModelsFileError) as error:
        load_pack_file(path)
    assert any(where in p.path and says in p.message for p in error.value.problems), error.value.render()


@pytest.mark.parametrize(
    ("stack", "key"),
    [
        ({"nodePool": {"instanceType": "g6e.xlarge"}}, "instanceType: pack chooses"),
        ({"budget": {"llmMinConcurrency": 2}}, "give minConcurrency on the servers"),
        ({"nodePool": {"mode": "managed"}}, "subnetIds"),
    ],
)
def test_stack_settings_pack_chooses_or_that_are_invalid_are_refused(
    tmp_path: Path, stack: dict[str, object], key: str
) -> None:
    path = write_models(tmp_path / "m.yaml", {"llms": [LLM], "embeddings": [EMBEDDER], "stack": stack})
    with pytest.raises(ModelsFileError, match=key):
        load_pack_file(path)


def test_a_missing_models_file_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(ModelsFileError, match="file not found"):
        load_pack_file(tmp_path / "absent.yaml")


def test_a_stack_becomes_a_request_with_its_pairs_budget_region_and_spare_gpus() -> None:
    config = load_config(load_stack("prod"))
    request = request_from_stack(config, "stack prod")
    assert [llm.name for llm in request.llms] == [pair.name for pair in config.pairs]
    assert all(llm.embedding == f"{llm.name}.embedding" for llm in request.llms)
    assert request.region == config.aws_region
    assert request.spare_gpus == config.node_pool.spare_gpus
    assert request.current_instance == config.node_pool.instance_type
    assert all(llm.min_concurrency == config.budget.llm_min_concurrency for llm in request.llms)
    assert "instanceType" not in request.base["nodePool"]
    assert request.base["nodePool"]["subnetIds"] == config.node_pool.subnet_ids


def test_a_stack_s_memory_overrides_are_dropped_with_a_note() -> None:
    config = load_config(load_stack("prod"))
    llm = config.pairs[0].llm.model_copy(update={"gpu_memory_utilization": 0.8})
    pinned = config.model_copy(update={"pairs": [config.pairs[0].model_copy(update={"llm": llm})]})
    llm.model_fields_set.add("gpu_memory_utilization")
    request = request_from_stack(pinned, "stack prod")
    assert "gpuMemoryUtilization" not in request.llms[0].server
    assert any("gpuMemoryUtilization" in note for note in request.notes)
