"""The stack config is parsed once, and every problem names the path a user writes in stack YAML."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.stackfiles import list_stacks, load_stack


def _valid() -> dict[str, Any]:
    return copy.deepcopy(load_stack("local").values)


def _problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    return {problem.path: problem.message for problem in caught.value.problems}


@pytest.mark.parametrize("stack", list_stacks())
def test_every_shipped_stack_parses(stack: str) -> None:
    config = parse_stack_config(load_stack(stack).values)
    assert config.pairs


def test_a_bad_value_names_its_stack_config_path() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["maxModelLen"] = -5
    problems = _problems(raw)
    assert "colo:pairs[0].llm.maxModelLen" in problems
    assert "greater than or equal to 16" in problems["colo:pairs[0].llm.maxModelLen"]


def test_a_misspelled_key_is_an_error_not_silently_ignored() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["maxModelLength"] = 4096
    assert "unknown key" in _problems(raw)["colo:pairs[0].llm.maxModelLength"]


def test_all_problems_are_reported_in_one_run() -> None:
    raw = _valid()
    raw["pairs"][0]["name"] = "Chat_1"
    raw["cluster"]["kubernetesVersion"] = "v1.34"
    raw["pairs"][0]["embedding"]["kvCacheDtype"] = "int8"
    problems = _problems(raw)
    assert {
        "colo:pairs[0].name",
        "colo:cluster.kubernetesVersion",
        "colo:pairs[0].embedding.kvCacheDtype",
    } <= set(problems)


def test_unpinned_image_is_rejected_with_the_fix() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["vllm"] = {"version": "0.19.1", "image": "vllm/vllm-openai:latest"}
    message = _problems(raw)["colo:pairs[0].llm.vllm.image"]
    assert "moving tag" in message and "pin that tag" in message
    assert "vllm/vllm-openai:v0.34.0" in message  # what latest is today, from the image catalog


def test_an_image_without_a_tag_outside_the_catalog_is_refused_as_unpinned() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["vllm"] = {"version": "0.19.1", "image": "example.org/vllm"}
    assert "not pinned" in _problems(raw)["colo:pairs[0].llm.vllm.image"]


def test_flags_colo_derives_cannot_be_smuggled_through_extra_args() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["extraArgs"] = ["--gpu-memory-utilization=0.95"]
    message = _problems(raw)["colo:pairs[0].llm.extraArgs[0]"]
    assert "gpuMemoryUtilization" in message


def test_managed_node_pool_without_subnets_is_rejected() -> None:
    raw = _valid()
    raw["nodePool"] = {"mode": "managed", "gpu": "L40S", "instanceType": "g6e.xlarge"}
    assert "subnetIds" in _problems(raw)["colo:nodePool"]


def test_duplicate_pair_names_are_rejected() -> None:
    raw = _valid()
    raw["pairs"].append(copy.deepcopy(raw["pairs"][0]))
    assert "used twice" in _problems(raw)["colo:pairs"]


def test_unknown_top_level_key_is_named() -> None:
    raw = _valid()
    raw["pair"] = []
    assert "colo:pair" in _problems(raw)


def test_missing_pairs_is_required() -> None:
    raw = _valid()
    del raw["pairs"]
    assert "required" in _problems(raw)["colo:pairs"]


def test_enforce_eager_with_capture_sizes_is_contradictory() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["enforceEager"] = True
    raw["pairs"][0]["llm"]["cudagraphCaptureSizes"] = [1, 2]
    assert "enforceEager" in _problems(raw)["colo:pairs[0].llm"]


def test_weights_from_s3_need_a_pinned_sync_image_named_at_its_own_key() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["weightsUri"] = "s3://models/qwen3-8b/"
    message = _problems(raw)["colo:storage.syncImage"]
    assert "pairs chat" in message
    assert "Dockerfile" in message
    raw["storage"]["syncImage"] = "registry.example/colo-sync"
    assert "not pinned" in _problems(raw)["colo:storage.syncImage"]
    raw["storage"]["syncImage"] = "registry.example/colo-sync:0.1.0"
    assert parse_stack_config(raw).storage.sync_image == "registry.example/colo-sync:0.1.0"


def test_weights_from_s3_cannot_be_copied_into_a_read_only_volume() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["weightsUri"] = "s3://models/qwen3-8b/"
    raw["storage"] = {**raw["storage"], "syncImage": "registry.example/colo-sync:0.1.0"}
    raw["storage"]["accessMode"] = "ReadOnlyMany"
    assert "ReadWriteOnce" in _problems(raw)["colo:storage.accessMode"]


def test_quantization_accepts_vllms_own_names_for_the_pinned_release() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["quantization"] = "compressed-tensors"
    assert parse_stack_config(raw).pairs[0].llm.quantization == "compressed-tensors"


def test_quantization_refuses_a_name_no_vllm_has() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["quantization"] = "int3"
    assert "no vLLM quantization method" in _problems(raw)["colo:pairs[0].llm.quantization"]


def test_quantization_refuses_a_name_the_pinned_release_dropped() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["quantization"] = "bitsandbytes"
    raw["pairs"][0]["llm"]["vllm"] = {"version": "0.28.0"}
    assert "invalid choice: 'bitsandbytes'" in _problems(raw)["colo:pairs[0].llm"]


def test_kv_cache_dtype_names_follow_the_release() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["kvCacheDtype"] = "bfloat16"
    raw["pairs"][0]["llm"]["vllm"] = {"version": "0.10.2"}
    assert "no kv-cache dtype 'bfloat16'" in _problems(raw)["colo:pairs[0].llm"]
    raw["pairs"][0]["llm"]["vllm"] = {"version": "0.11.0"}
    assert parse_stack_config(raw).pairs[0].llm.kv_cache_dtype == "bfloat16"


def test_a_kv_cache_dtype_colo_cannot_size_is_refused_by_name() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["kvCacheDtype"] = "nvfp4"
    assert "colo does not size" in _problems(raw)["colo:pairs[0].llm.kvCacheDtype"]


@pytest.mark.parametrize("name", ["auto", "half", "float16", "bfloat16", "float", "float32"])
def test_a_server_takes_vllms_dtype_names(name: str) -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["dtype"] = name
    assert parse_stack_config(raw).pairs[0].llm.dtype == name


def test_a_server_without_dtype_leaves_it_to_vllm() -> None:
    assert parse_stack_config(_valid()).pairs[0].llm.dtype is None


def test_a_dtype_vllm_does_not_name_is_refused_at_its_key() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["dtype"] = "fp16"
    assert (
        "'auto', 'half', 'float16', 'bfloat16', 'float' or 'float32'"
        in _problems(raw)["colo:pairs[0].llm.dtype"]
    )
