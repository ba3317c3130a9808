"""Planning one pair step by step: validate -> size -> args -> probes -> assemble, each on its own."""

from __future__ import annotations

import copy

from colo.catalog import gpu
from colo.config import StackConfig, parse_stack_config
from colo.plan.pair import server_args, size_pair, startup_probes, validate_pair
from colo.stackfiles import load_stack


def _dev(**llm: object) -> dict[str, object]:
    raw = copy.deepcopy(load_stack("dev").values)
    raw["pairs"][0]["llm"].update(llm)
    return raw


def test_validation_reports_every_server_before_anything_is_sized() -> None:
    raw = _dev(model="example/unknown-model")
    raw["pairs"][0]["embedding"]["vllm"] = {"version": "0.7.3"}  # before the mirrored releases
    # the schema alone: parse_stack_config would refuse both names before any planning
    config = StackConfig.model_validate(raw)
    checked, problems = validate_pair(config.pairs[0], 0, None)
    assert [p.path for p in problems] == ["colo:pairs[0].embedding.vllm.version", "colo:pairs[0].llm.model"]
    assert [c.role for c in checked] == ["reranker"]  # the one server that could be sized


def test_validated_servers_come_in_start_order_with_their_config_paths() -> None:
    config = parse_stack_config(_dev())
    checked, problems = validate_pair(config.pairs[0], 0, None)
    assert not problems
    assert [(c.role, c.path) for c in checked] == [
        ("embedding", "colo:pairs[0].embedding"),
        ("reranker", "colo:pairs[0].reranker"),
        ("llm", "colo:pairs[0].llm"),
    ]


def test_a_server_whose_weights_are_synced_loads_them_from_the_model_volume() -> None:
    config = parse_stack_config(
        {**_dev(weightsUri="s3://models/qwen/"), "storage": {"syncImage": "registry.example/sync:1"}}
    )
    checked, _ = validate_pair(config.pairs[0], 0, None)
    gpu_plan = size_pair(checked, gpu(config.node_pool.gpu), config.budget)
    embedding, _, llm = (
        server_args("rag", c, plan) for c, plan in zip(checked, gpu_plan.servers, strict=True)
    )
    assert llm[0] == "/models/rag/llm"
    assert embedding[0] == checked[0].spec.model


def test_without_native_sidecars_a_later_server_waits_for_the_earlier_ones_in_its_budget() -> None:
    config = parse_stack_config(_dev())
    checked, _ = validate_pair(config.pairs[0], 0, None)
    gpu_plan = size_pair(checked, gpu(config.node_pool.gpu), config.budget)
    waiting = startup_probes(checked, gpu_plan, config.storage, native_sidecars=False)
    sidecars = startup_probes(checked, gpu_plan, config.storage, native_sidecars=True)
    assert waiting[0] == sidecars[0]
    assert waiting[2].breakdown["wait_for_earlier_servers"] == waiting[0].own_seconds + waiting[1].own_seconds
    assert sidecars[2].breakdown["wait_for_earlier_servers"] == 0
    assert waiting[2].startup_seconds > sidecars[2].startup_seconds


def test_a_quantization_that_disagrees_with_the_checkpoint_is_refused_with_vllms_message() -> None:
    config = parse_stack_config(_dev(model="Qwen/Qwen3-8B-FP8", quantization="awq"))
    _, problems = validate_pair(config.pairs[0], 0, None)
    assert any("does not match the quantization method" in p.message for p in problems)


def test_online_fp8_of_a_full_precision_checkpoint_is_planned_and_passed_to_vllm() -> None:
    config = parse_stack_config(_dev(model="Qwen/Qwen3-8B", quantization="fp8"))
    checked, problems = validate_pair(config.pairs[0], 0, None)
    assert not problems
    gpu_plan = size_pair(checked, gpu("L40S"), config.budget)
    llm, llm_plan = checked[-1], gpu_plan.servers[-1]
    assert llm.arch.quantization == "fp8"
    assert llm_plan.budget.weights_bytes < 10 * 1024**3  # 8B parameters at one byte, embeddings in bf16
    args = server_args(config.pairs[0].name, llm, llm_plan)
    assert args[args.index("--quantization") + 1] == "fp8"
