"""vLLM 0.8.0 - 0.11.x as read in each release's source (docs/vllm-memory-rules.md §1-7), boundary by boundary."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import GIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.budget import size_process
from colo.vllm.process.cudagraph import default_capture_sizes
from colo.vllm.process.kv_cache import blocks_per_request, hybrid_group_size, kv_geometry
from colo.vllm.rules import rules_for
from tests.vllm.helpers import process, sized


def test_up_to_090_the_kv_pool_is_util_times_total_minus_everything_on_the_device() -> None:
    # vllm 0.8.0 v1/worker/gpu_worker.py::determine_available_memory: total * util - (peak + non-torch), where
    # non-torch is every byte on the device outside this process's tensors: its context, other processes.
    spec = process("Qwen/Qwen3-8B", "H100-SXM", "0.9.0", gpu_memory_utilization=0.9)
    alone = size_process(spec)
    beside = size_process(spec, free_before_bytes=spec.gpu.cuda_total_bytes - 10 * GIB)
    assert alone.kv_bytes == (
        alone.requested_bytes
        - alone.context_bytes
        - alone.non_torch_bytes
        - alone.weights_bytes
        - alone.activation_bytes
    )
    assert alone.kv_bytes - beside.kv_bytes == 10 * GIB


def test_from_091_the_kv_pool_ignores_other_processes_and_the_own_context() -> None:
    spec = process("Qwen/Qwen3-8B", "H100-SXM", "0.9.1", gpu_memory_utilization=0.5)
    alone = size_process(spec)
    beside = size_process(spec, free_before_bytes=spec.gpu.cuda_total_bytes - 10 * GIB)
    assert alone.kv_bytes == beside.kv_bytes
    assert alone.kv_bytes == (
        alone.requested_bytes - alone.weights_bytes - alone.activation_bytes - alone.non_torch_bytes
    )


def test_no_startup_check_before_091_and_vllms_own_text_from_091() -> None:
    for version, checked in (("0.9.0", False), ("0.9.1", True)):
        spec = process("Qwen/Qwen3-8B", "L40S", version, gpu_memory_utilization=0.55)
        budget = size_process(spec, free_before_bytes=int(0.9 * GIB))
        assert budget.startup.ok is not checked
    failed = size_process(
        process("Qwen/Qwen3-8B", "L40S", "0.9.1", gpu_memory_utilization=0.55),
        free_before_bytes=int(0.9 * GIB),
    )
    assert failed.startup.message.startswith("ValueError: Free memory on device (0.41/44.39 GiB) on startup")


def test_global_accounting_footprint_is_the_cap_minus_what_others_hold_plus_graphs() -> None:
    spec = process("Qwen/Qwen3-8B", "H100-SXM", "0.8.5", gpu_memory_utilization=0.9)
    beside = size_process(spec, free_before_bytes=spec.gpu.cuda_total_bytes - 10 * GIB)
    assert beside.footprint_bytes == (
        beside.requested_bytes - 10 * GIB + beside.graphs.bytes + beside.post_profile_bytes
    )


@pytest.mark.parametrize(
    ("version", "gpu_name", "tokens", "seqs"),
    [
        ("0.8.0", "H100-SXM", 8192, 1024),  # "h100" in the device name
        ("0.8.0", "A100-80GB", 2048, 1024),  # max_num_seqs 1024 on every GPU
        ("0.8.3", "L40S", 2048, 1024),
        ("0.8.4", "L40S", 2048, 256),  # 256 outside the H100/H200 names
        ("0.8.4", "H200", 8192, 1024),
        ("0.8.5", "A100-80GB", 8192, 1024),  # by memory, A100s included
        ("0.9.0", "A100-80GB", 2048, 256),  # "a100" excluded
        ("0.9.0", "H100-SXM", 8192, 1024),
    ],
)
def test_server_batch_defaults_follow_each_releases_tiering(
    version: str, gpu_name: str, tokens: int, seqs: int
) -> None:
    limits = process("Qwen/Qwen3-8B", gpu_name, version).limits
    assert (limits.max_num_batched_tokens, limits.max_num_seqs) == (tokens, seqs)


def test_from_0101_default_max_num_seqs_never_exceeds_max_num_batched_tokens() -> None:
    before = process("Qwen/Qwen3-8B", "L40S", "0.10.0", max_num_batched_tokens=128).limits
    after = process("Qwen/Qwen3-8B", "L40S", "0.10.1", max_num_batched_tokens=128).limits
    assert before.max_num_seqs == 256
    assert after.max_num_seqs == 128


def test_up_to_092_every_multiple_of_eight_to_512_is_captured_whatever_max_num_seqs() -> None:
    old = default_capture_sizes(rules_for("0.9.2"), max_num_seqs=16, max_num_batched_tokens=8192)
    new = default_capture_sizes(rules_for("0.10.0"), max_num_seqs=16, max_num_batched_tokens=8192)
    assert len(old) == 67 and max(old) == 512
    assert max(new) == 32  # min(2 * max_num_seqs, 512)


def test_up_to_090_concurrency_is_tokens_over_max_model_len() -> None:
    old = sized("Qwen/Qwen3-8B", "H100-SXM", "0.9.0", max_model_len=1000)
    new = sized("Qwen/Qwen3-8B", "H100-SXM", "0.9.1", max_model_len=1000)
    assert old.capacity is not None and new.capacity is not None
    assert old.capacity.max_concurrency == pytest.approx(old.capacity.tokens / 1000)
    # 0.9.1+: blocks over whole blocks per request (1000 tokens need 63 blocks = 1008 tokens)
    assert new.capacity.max_concurrency == pytest.approx(new.capacity.num_blocks / 63)


@pytest.mark.parametrize(("version", "sliding"), [("0.8.2", False), ("0.8.3", False), ("0.9.1", True)])
def test_sliding_window_layers_get_their_own_spec_only_from_091_for_mixed_models(
    version: str, sliding: bool
) -> None:
    geometry = kv_geometry(catalog_architecture("google/gemma-3-27b-it"), rules=rules_for(version))
    assert geometry is not None
    assert any(b.kind == "sliding" for b in geometry.buckets) is sliding


def test_a_model_whose_every_layer_slides_keeps_its_window_from_083() -> None:
    arch = catalog_architecture("mistralai/Mistral-7B-Instruct-v0.3")
    sliding = replace(
        arch, full_attention_layers=0, sliding_attention_layers=arch.num_layers, sliding_window=4096
    )
    for version, kept in (("0.8.2", False), ("0.8.3", True)):
        geometry = kv_geometry(sliding, rules=rules_for(version))
        assert geometry is not None
        assert any(b.kind == "sliding" for b in geometry.buckets) is kept


@pytest.mark.parametrize(
    ("version", "ratio"), [("0.11.2", 0.0), ("0.12.0", 1.25), ("0.17.1", 1.25), ("0.18.0", 1.5)]
)
def test_hybrid_group_size_takes_the_most_layers_only_within_the_releases_ratio(
    version: str, ratio: float
) -> None:
    assert rules_for(version).hybrid_group_size_ratio == ratio
    # 12 sliding + 13 full layers (gpt-oss-20b + a drafter): grouped by 13 when 13 < ratio * 12

    assert hybrid_group_size([12, 13], ratio) == (13 if ratio else 12)


@pytest.mark.parametrize(
    ("version", "per_group"),
    [("0.11.0", 1), ("0.11.1", 21), ("0.14.1", 21), ("0.16.0", 2), ("0.25.1", 2), ("0.26.0", 3)],
)
def test_a_recurrent_state_counts_per_request_as_the_release_says(version: str, per_group: int) -> None:
    # Qwen3.6-27B fp8 KV: block 1568 tokens; 32768 tokens = 21 blocks; MTP with one draft token.
    arch = catalog_architecture("Qwen/Qwen3.6-27B-FP8")
    geometry = kv_geometry(arch, "fp8", num_speculative_tokens=1, rules=rules_for(version))
    assert geometry is not None
    linear_groups = sum(-(-b.layers // geometry.group_size) for b in geometry.buckets if b.kind == "linear")
    full_groups = sum(-(-b.layers // geometry.group_size) for b in geometry.buckets if b.kind == "full")
    total = blocks_per_request(geometry, 32768, 2048, num_speculative_tokens=1)
    assert total == full_groups * 21 + linear_groups * per_group


def test_kv_error_text_follows_the_releases_wording() -> None:
    def error(version: str) -> str:
        budget = sized("Qwen/Qwen3-32B-FP8", "L40S", version, max_model_len=40960, gpu_memory_utilization=0.9)
        assert budget.errors
        return budget.errors[0]

    assert "models's max seq len (40960), (10.00 GB KV cache" in error("0.8.2")
    assert "models's max seq len (40960), (10.00 GiB KV cache" in error("0.8.3")
    assert "estimated maximum model length" not in error("0.9.0")
    assert "estimated maximum model length" in error("0.9.1")
    assert "models's" in error("0.21.0")
    assert "the model's max seq len" in error("0.22.0")
