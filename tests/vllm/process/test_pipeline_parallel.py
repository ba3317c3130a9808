"""Pipeline parallelism as vLLM runs it: layers per stage, what else each stage holds, KV per stage and the
blocks the engine keeps, release by release (docs/vllm-memory-rules.md §16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colo.catalog import GIB, MIB
from colo.vllm import EstimateRefused, EstimateRequest, estimate, estimate_view
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.kv_cache import kv_geometry
from colo.vllm.process.pipeline import Stage, pp_indices, stages
from colo.vllm.process.weights import estimate_weights
from colo.vllm.rules import measured_constants, rules_for, supports_pipeline_parallel

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _estimate(pp: int, **fields: Any) -> Any:
    request = {
        "model": LLAMA_8B,
        "vllm_version": "0.19.0",
        "gpu": "H100-SXM",
        "gpu_memory_utilization": 0.95,
        "max_model_len": 8192,
        "pipeline_parallel_size": pp,
        **fields,
    }
    return estimate(EstimateRequest(**request))


@pytest.mark.parametrize(
    ("layers", "size", "partitions"),
    [
        (32, 2, [16, 16]),
        (32, 4, [8, 8, 8, 8]),
        (30, 4, [7, 8, 8, 7]),  # the remainder goes to the middle stages, not to the first and last
        (31, 4, [8, 8, 8, 7]),  # three left over: the second-to-last backwards, then the first
        (61, 8, [7, 7, 8, 8, 8, 8, 8, 7]),
        (3, 4, [1, 1, 1, 0]),
    ],
)
def test_layers_split_as_get_pp_indices_splits_them(layers: int, size: int, partitions: list[int]) -> None:
    found = [end - start for start, end in (pp_indices(layers, rank, size) for rank in range(size))]
    assert found == partitions
    assert [s.start for s in stages(layers, size)] == [sum(partitions[:r]) for r in range(size)]


def _parts(model: str, stage: Stage | None) -> dict[str, int]:
    arch = catalog_architecture(model)
    return estimate_weights(arch, stage=stage, vllm_version="0.19.0").detail


def test_the_embedding_sits_on_the_first_stage_and_the_lm_head_on_the_last() -> None:
    vocab_rows = 128256 * 4096 * 2  # one bfloat16 embedding or lm_head
    first, middle, last = (_parts(LLAMA_8B, Stage(r, 4, 8 * r, 8 * r + 8)) for r in (0, 1, 3))
    assert (first["embedding"], first["lm_head"]) == (vocab_rows, 0)
    assert (middle["embedding"], middle["lm_head"]) == (0, 0)
    assert (last["embedding"], last["lm_head"]) == (0, vocab_rows)
    assert first["attention"] == middle["attention"] == last["attention"]
    whole = _parts(LLAMA_8B, None)
    assert 4 * middle["mlp"] == whole["mlp"]
    assert last["small_tensors"] - middle["small_tensors"] == 4096 * 2  # the final norm


def test_the_exact_checkpoint_bytes_are_spread_over_the_stages_like_the_rest() -> None:
    whole = _parts(LLAMA_8B, None)["checkpoint_residual"]
    spread = sum(_parts(LLAMA_8B, s)["checkpoint_residual"] for s in stages(32, 4))
    assert whole != 0 and abs(spread - whole) <= abs(whole) // 10 + 4


def test_tied_embeddings_put_a_copy_of_the_embedding_on_the_last_stage_too() -> None:
    model = "Qwen/Qwen3-4B"  # 36 layers, tied embeddings
    first, middle, last = (_parts(model, Stage(r, 3, 12 * r, 12 * r + 12)) for r in range(3))
    assert first["embedding"] > 0 and middle["embedding"] == 0
    assert last["embedding"] == first["embedding"] and last["lm_head"] == 0


def test_each_stage_caches_only_its_own_layers_and_the_engine_keeps_the_fewest_blocks() -> None:
    result = _estimate(2)
    first, last = result.stages
    assert first.capacity is not None and last.capacity is not None
    one_layer_page = 2 * 8 * 128 * 2 * 16  # K and V, 8 KV heads of 128, bfloat16, 16 tokens
    assert first.capacity.bytes_per_block == last.capacity.bytes_per_block == 16 * one_layer_page
    assert last.activation_bytes > first.activation_bytes  # only the last stage samples
    assert last.capacity.num_blocks < first.capacity.num_blocks
    assert result.binding_stage == 1 and result.budget is last
    assert result.budget.capacity is not None
    assert result.budget.capacity.tokens == last.capacity.num_blocks * 16


def test_every_stage_but_the_first_keeps_buffers_for_the_hidden_states_it_receives() -> None:
    result = _estimate(4)
    received = 2 * 8192 * 4096 * 2  # hidden states and residual for max_num_batched_tokens, bfloat16
    first, second, third, _ = result.stages
    assert second.activation_bytes == third.activation_bytes
    assert second.activation_bytes - first.activation_bytes == received


def test_pp_and_tp_together_split_each_stage_over_its_tensor_parallel_ranks() -> None:
    alone, split = _estimate(2), _estimate(2, tensor_parallel_size=2)
    for pp_only, both in zip(alone.stages, split.stages, strict=True):
        assert both.weights_bytes < pp_only.weights_bytes * 0.52
        assert both.capacity is not None and pp_only.capacity is not None
        assert both.capacity.bytes_per_block * 2 == pp_only.capacity.bytes_per_block


def test_the_pp_groups_communicator_is_charged_like_the_tp_groups_and_point_to_point_ones_after_startup() -> (
    None
):
    sizes = measured_constants().tp_communication_mib.peer_to_peer
    result = _estimate(3)
    for budget in result.stages:  # 0.19: built before the snapshot, the startup check sees it
        assert budget.communication.before_snapshot == sizes.first_nccl_communicator * MIB
    peers = [b.communication.unbudgeted // (sizes.torch_nccl_group * MIB) for b in result.stages]
    assert peers == [1, 2, 1]
    with_tp = _estimate(2, tensor_parallel_size=2).stages[0].communication
    without_pp = _estimate(1, tensor_parallel_size=2).budget.communication
    assert with_tp.before_snapshot - without_pp.before_snapshot == sizes.next_nccl_communicator * MIB


def test_before_0110_the_pp_communicator_is_paid_from_the_kv_budget() -> None:
    budget = _estimate(2, vllm_version="0.10.2").stages[0]
    assert budget.communication.before_snapshot == 0
    assert (
        budget.communication.in_budget
        == measured_constants().tp_communication_mib.peer_to_peer.first_nccl_communicator * MIB
    )


def test_a_hybrid_models_stages_form_their_own_groups_until_0102_then_share_the_whole_models() -> None:
    """Gemma 3 27B at PP 2: a stage holds 5 full and 26 sliding layers. 0.10.2 groups them by 5; from 0.11.0
    the whole model's groups of 10 (its 10 full layers) are projected on each stage."""
    arch = catalog_architecture("google/gemma-3-27b-it")
    stage = Stage(0, 2, 0, 31)
    per_stage = kv_geometry(arch, rules=rules_for("0.10.2"), stage=stage)
    projected = kv_geometry(arch, rules=rules_for("0.11.0"), stage=stage)
    whole = kv_geometry(arch, rules=rules_for("0.11.0"))
    assert per_stage is not None and projected is not None and whole is not None
    assert per_stage.group_size == 5 and per_stage.slots == 0
    assert projected.group_size == whole.group_size == 10 and projected.slots == 10
    assert projected.num_groups == whole.num_groups


def test_a_uniform_models_stage_pool_costs_only_its_layers_in_every_release() -> None:
    arch = catalog_architecture(LLAMA_8B)
    for version in ("0.9.0", "0.10.2", "0.11.0", "0.33.0"):
        geometry = kv_geometry(arch, rules=rules_for(version), stage=Stage(1, 4, 8, 16))
        assert geometry is not None
        assert geometry.bytes_per_block == 8 * 2 * 8 * 128 * 2 * 16, version


@pytest.mark.parametrize(
    ("version", "fits"), [("0.13.0", True), ("0.14.0", False), ("0.16.0", False), ("0.17.0", True)]
)
def test_0140_to_0160_hold_one_request_of_the_whole_model_against_the_smallest_stage_pool(
    version: str, fits: bool
) -> None:
    """131,072 tokens of Llama 3.1 8B need 16 GiB over all 32 layers, 8 GiB on a stage of 16."""
    result = _estimate(2, vllm_version=version, max_model_len=131072, gpu_memory_utilization=0.3)
    assert result.ok is fits
    if not fits:
        smallest = min(b.kv_bytes for b in result.stages)
        assert result.budget.kv_bytes == smallest
        assert "(16.00 GiB KV cache is needed" in result.budget.errors[0]


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("0.8.2", "PP is experimental on VLLM_USE_V1=1. Falling back to V0 Engine."),
        ("0.8.3", "Pipeline Parallelism without Ray distributed executor is not supported by the V1 Engine."),
        ("0.8.5", "Pipeline Parallelism without Ray distributed executor is not supported by the V1 Engine."),
    ],
)
def test_before_0090_pp_runs_the_v0_engine_which_colo_refuses(version: str, reason: str) -> None:
    with pytest.raises(EstimateRefused) as refused:
        _estimate(2, vllm_version=version, gpu_memory_utilization=0.9)
    assert refused.value.field == "vllm_version" and reason in refused.value.message


def test_0090_runs_pp_on_v1() -> None:
    assert len(_estimate(2, vllm_version="0.9.0", gpu_memory_utilization=0.9).stages) == 2


def test_a_model_class_without_supports_pp_is_refused_in_vllms_words() -> None:
    with pytest.raises(EstimateRefused) as refused:
        estimate(
            EstimateRequest(
                model="BAAI/bge-m3",
                vllm_version="0.20.0",
                gpu="H100-SXM",
                pooling=True,
                pipeline_parallel_size=2,
            )
        )
    assert refused.value.field == "pipeline_parallel_size"
    assert refused.value.message.startswith(
        "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement "
        "the `SupportsPP` interface."
    )


@pytest.mark.parametrize(("version", "supported"), [("0.10.1.1", False), ("0.10.2", True)])
def test_gpt_oss_gains_pp_in_0102(version: str, supported: bool) -> None:
    assert supports_pipeline_parallel("GptOssForCausalLM", version) is supported


def test_the_catalogs_decoders_implement_supports_pp_where_they_exist() -> None:
    for architecture in (
        "LlamaForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "Gemma3ForConditionalGeneration",
    ):
        assert supports_pipeline_parallel(architecture, "0.20.0"), architecture
    assert not supports_pipeline_parallel("XLMRobertaModel", "0.33.0")


def test_more_stages_than_layers_and_a_size_below_one_are_refused() -> None:
    with pytest.raises(EstimateRefused, match=r"33 pipeline stages for 32 decoder layers"):
        _estimate(33)
    with pytest.raises(EstimateRefused, match=r"pipeline_parallel_size must be at least 1"):
        _estimate(0)


def test_speculative_decoding_with_pp_is_refused_rather_than_guessed() -> None:
    with pytest.raises(EstimateRefused) as refused:
        _estimate(2, speculative_method="ngram", num_speculative_tokens=2)
    assert refused.value.field == "speculative_method"


@pytest.mark.parametrize(
    ("version", "logged_by"),
    [("0.9.0", "none"), ("0.9.1", "every_stage"), ("0.11.0", "every_stage"), ("0.11.1", "first_stage")],
)
def test_the_view_says_which_stage_binds_and_which_prints_available_kv_cache_memory(
    version: str, logged_by: str
) -> None:
    view = estimate_view(_estimate(2, vllm_version=version, gpu_memory_utilization=0.9))
    pipeline = view["pipeline"]
    assert pipeline["binding_stage"] == 1 and [s["rank"] for s in pipeline["stages"]] == [0, 1]
    assert pipeline["available_kv_cache_logged_by"] == logged_by
    logged = pipeline["available_kv_cache_logged_gib"]
    assert (logged == pipeline["stages"][0]["kv_cache_gib"]) if logged_by == "first_stage" else logged is None
    assert view["kv_cache_gib"] == pipeline["stages"][1]["kv_cache_gib"]
    assert all(s["num_gpu_blocks_used"] == view["num_gpu_blocks"] for s in pipeline["stages"])


def test_without_pp_the_estimate_has_no_stages() -> None:
    result = _estimate(1)
    assert result.stages == () and result.binding_stage == 0 and "pipeline" not in estimate_view(result)
    assert round(result.budget.weights_bytes / GIB, 2) == 14.99


def test_classes_that_build_the_embedding_and_head_unconditionally_hold_them_on_every_stage() -> None:
    """Qwen3-MoE's model and head classes have no rank condition (qwen3_moe.py): each stage loads both."""
    model = "Qwen/Qwen3-30B-A3B"  # 48 layers, untied
    arch = catalog_architecture(model)
    vocab_rows = arch.vocab_size * arch.hidden_size * 2
    for rank in range(3):
        parts = _parts(model, Stage(rank, 3, 16 * rank, 16 * rank + 16))
        assert parts["embedding"] == vocab_rows and parts["lm_head"] == vocab_rows


def test_a_model_whose_placement_colo_has_not_read_is_refused_at_pp(tmp_path: Path) -> None:
    config = {
        "architectures": ["OlmoForCausalLM"],
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "intermediate_size": 8192,
        "vocab_size": 50304,
        "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    request = {"model": str(path), "vllm_version": "0.20.0", "gpu": "H100-SXM", "max_model_len": 4096}
    assert estimate(EstimateRequest(**request)).budget.ok
    with pytest.raises(EstimateRefused, match=r"colo has not read where vLLM's OlmoForCausalLM builds"):
        estimate(EstimateRequest(**request, pipeline_parallel_size=2))
