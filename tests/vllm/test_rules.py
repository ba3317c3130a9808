"""vLLM's startup accounting, rule by rule and release by release (docs/vllm-memory-rules.md)."""

from __future__ import annotations

import re

import pytest

from colo.catalog import GIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.cudagraph import default_capture_sizes
from colo.vllm.process.kv_cache import kv_capacity, kv_geometry
from colo.vllm.rules import SUPPORT_DAYS, rules_for, supported_range
from tests.vllm.helpers import process, sized


def test_requested_memory_is_rounded_up_from_014_and_a_plain_product_before() -> None:
    old = sized("Qwen/Qwen3-8B", "L40S", "0.13.0", gpu_memory_utilization=0.9)
    new = sized("Qwen/Qwen3-8B", "L40S", "0.14.0", gpu_memory_utilization=0.9)
    exact = old.spec.gpu.cuda_total_bytes * 0.9
    assert old.requested_bytes == int(exact)
    assert new.requested_bytes == -(-int(exact * 10) // 10) or new.requested_bytes >= exact


def test_startup_check_compares_requested_with_free_memory_after_the_own_context() -> None:
    budget = sized("Qwen/Qwen3-8B", "L40S", "0.20.2", gpu_memory_utilization=0.55)
    assert budget.startup.ok
    crowded = process("Qwen/Qwen3-8B", "L40S", "0.20.2", gpu_memory_utilization=0.55)
    from colo.vllm.process.budget import size_process

    failed = size_process(crowded, free_before_bytes=int(0.9 * GIB))
    assert not failed.startup.ok
    assert failed.startup.message.startswith("ValueError: Free memory on device cuda:0 (0.41/44.39 GiB)")
    assert "(0.55, 24.42 GiB)" in failed.startup.message  # the field report's failure 2, to the digit


def test_error_text_names_the_device_only_from_014() -> None:
    assert "device cuda:0" not in rules_for("0.13.0").startup_error(
        free_gib=1, total_gib=2, util=0.5, requested_gib=1
    )
    assert "device cuda:0" in rules_for("0.14.0").startup_error(
        free_gib=1, total_gib=2, util=0.5, requested_gib=1
    )


@pytest.mark.parametrize(
    ("version", "model", "subtracted"),
    [
        ("0.11.0", "Qwen/Qwen3-8B", False),  # no estimate before 0.18
        ("0.19.1", "Qwen/Qwen3-8B", False),  # estimated and logged, not subtracted by default
        ("0.20.2", "Qwen/Qwen3-8B", True),
        ("0.22.0", "Qwen/Qwen3-8B", False),  # V2 runner for Qwen3 dense; its estimate is a stub returning 0
        ("0.22.0", "Qwen/Qwen3-30B-A3B", True),  # MoE stays on V1
        ("0.27.1", "meta-llama/Llama-3.1-8B-Instruct", False),  # dense text on V2
        ("0.27.1", "Qwen/Qwen3.6-27B-FP8", True),  # hybrid GDN stays on V1
        ("0.31.0", "meta-llama/Llama-3.1-8B-Instruct", True),  # V2 has a real estimate from 0.29
    ],
)
def test_cuda_graph_estimate_comes_off_the_kv_pool_only_where_the_release_does_it(
    version: str, model: str, subtracted: bool
) -> None:
    assert sized(model, "H100-SXM", version).graph_estimate_in_budget is subtracted


def test_eager_and_fixed_kv_bytes_never_subtract_a_graph_estimate() -> None:
    assert not sized("Qwen/Qwen3-8B", "H100-SXM", "0.31.0", enforce_eager=True).graph_estimate_in_budget
    fixed = sized("Qwen/Qwen3-8B", "H100-SXM", "0.31.0", kv_cache_memory_bytes=10 * GIB)
    assert not fixed.graph_estimate_in_budget
    assert fixed.kv_bytes == 10 * GIB


def test_kv_pool_is_requested_minus_weights_activation_non_torch_and_vllms_graph_estimate() -> None:
    b = sized("Qwen/Qwen3-8B", "H100-SXM", "0.31.0", gpu_memory_utilization=0.8)
    # the estimate is subtracted, not what the capture takes
    assert b.graphs.estimate_bytes != b.graphs.bytes
    assert (
        b.kv_bytes
        == b.requested_bytes
        - b.weights_bytes
        - b.activation_bytes
        - b.non_torch_bytes
        - b.graphs.estimate_bytes
    )


def test_default_capture_sizes_match_vllms_log_for_256_sequences() -> None:
    # "Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)" (vllm PR #39559)
    sizes = default_capture_sizes(rules_for("0.21.0"), max_num_seqs=256, max_num_batched_tokens=2048)
    assert len(sizes) == 51 and max(sizes) == 512
    assert len([s for s in sizes if s <= 256]) == 35


def test_011_captures_every_multiple_of_eight_up_to_twice_the_sequences() -> None:
    sizes = default_capture_sizes(rules_for("0.11.0"), max_num_seqs=256, max_num_batched_tokens=8192)
    assert len(sizes) == 67  # "Capturing CUDA graphs (decode, FULL): 67/67" in 0.11-era logs


def test_dense_kv_blocks_tokens_and_concurrency_match_a_public_log() -> None:
    # Qwen3-14B, 6.51 GiB available -> 42,656 tokens and 1.30x at 32,768 (LMCache issue #1739).
    arch = catalog_architecture("Qwen/Qwen3-14B")
    geometry = kv_geometry(arch)
    assert geometry is not None
    capacity = kv_capacity(
        geometry,
        int(6.51 * GIB),
        max_model_len=32768,
        max_num_batched_tokens=2048,
        num_speculative_tokens=0,
        tokens_from_concurrency=False,
    )
    assert capacity.num_blocks == 2666
    assert capacity.tokens == 42_656
    assert round(capacity.max_concurrency, 2) == 1.30


def test_hybrid_gdn_block_size_matches_vllms_log() -> None:
    # "Setting attention block size to 1568 tokens" for Qwen3.6/3.8-27B with fp8 KV at TP1.
    geometry = kv_geometry(catalog_architecture("Qwen/Qwen3.6-27B-FP8"), "fp8")
    assert geometry is not None
    full = next(b for b in geometry.buckets if b.kind == "full")
    assert full.block_tokens == 1568
    assert geometry.group_size == 16 and geometry.num_groups == 4


@pytest.mark.parametrize(("old_version", "new_version"), [("0.20.0", "0.20.1"), ("0.20.0", "0.21.0")])
def test_from_0201_reported_tokens_are_concurrency_times_max_model_len(
    old_version: str, new_version: str
) -> None:
    # vllm 0.20.1 v1/core/kv_cache_utils.py::_report_kv_cache_config: num_tokens = int(max_concurrency *
    # max_model_len); 0.20.0 still prints num_blocks // num_groups * block_size.
    old = sized("Qwen/Qwen3.6-27B-FP8", "H100-SXM", old_version, max_model_len=32768, kv_cache_dtype="fp8")
    new = sized("Qwen/Qwen3.6-27B-FP8", "H100-SXM", new_version, max_model_len=32768, kv_cache_dtype="fp8")
    assert new.capacity is not None and old.capacity is not None
    assert new.capacity.tokens == int(new.capacity.max_concurrency * 32768)
    assert old.capacity.tokens == old.capacity.num_blocks // 4 * 1568


def test_encoder_only_embedder_reserves_nothing_up_to_its_utilization() -> None:
    budget = sized(
        "BAAI/bge-m3", "L40S", "0.20.2", pooling=True, gpu_memory_utilization=0.3, max_model_len=8192
    )
    assert budget.capacity is None and budget.kv_bytes == 0
    assert budget.footprint_bytes < 0.1 * budget.spec.gpu.cuda_total_bytes
    assert budget.spec.limits.max_num_batched_tokens == 8192  # no chunked prefill: one batch holds an input


def test_a_max_model_len_request_that_does_not_fit_fails_like_vllm() -> None:
    budget = sized("Qwen/Qwen3-32B-FP8", "L40S", "0.20.2", max_model_len=40960)
    assert budget.weights_fit
    assert budget.errors
    assert budget.errors[0].startswith(
        "ValueError: To serve at least one request with the models's max seq len (40960), ("
    )
    assert "the estimated maximum model length is" in budget.errors[0]


def test_weights_larger_than_the_gpu_are_refused_as_such_not_as_a_kv_shortfall() -> None:
    budget = sized("Qwen/Qwen3-32B", "L40S", "0.20.2", max_model_len=32768)
    assert not budget.weights_fit
    assert budget.errors == ("weights 61.03 GiB do not fit on a 44.39 GiB GPU (L40S)",)


def test_large_gpus_get_larger_batch_defaults_and_a_third_tier_from_028() -> None:
    h200_old = process("Qwen/Qwen3-8B", "H200", "0.27.1").limits
    assert (h200_old.max_num_batched_tokens, h200_old.max_num_seqs) == (8192, 1024)
    l40s = process("Qwen/Qwen3-8B", "L40S", "0.28.0").limits
    assert (l40s.max_num_batched_tokens, l40s.max_num_seqs) == (2048, 256)


def test_sampler_profile_shrinks_when_top_k_top_p_stops_sorting_in_017() -> None:
    sorting = sized("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM", "0.16.0")
    triton = sized("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM", "0.17.0")
    assert sorting.activation_bytes > 2 * triton.activation_bytes


def test_versions_outside_the_mirrored_range_are_refused_with_the_range() -> None:
    last = supported_range()[1]
    with pytest.raises(ValueError, match=rf"older than 0\.8\.0.*\(0\.8\.0 to {re.escape(last)}\)"):
        rules_for("0.7.3")
    with pytest.raises(ValueError, match=rf"newer than {re.escape(last)}, the newest release"):
        rules_for("0.40.0")


def test_a_newer_release_is_refused_with_the_newest_mirrored_one_and_the_override_at_the_users_risk() -> None:
    last = supported_range()[1]
    with pytest.raises(ValueError) as refused:
        rules_for("0.99.0")
    message = str(refused.value)
    assert f"pin {last}" in message
    assert f'set vllm.assumeRulesOf: "{last}" on the server' in message
    assert f"--assume-rules-of {last}" in message and "at your own risk" in message
    assert f"within {SUPPORT_DAYS} days" in message


def test_a_patch_release_of_the_newest_minor_follows_it_without_an_override() -> None:
    last = supported_range()[1]
    major, minor, _ = last.split(".", 2)
    assert rules_for(f"{major}.{minor}.9").last == last
