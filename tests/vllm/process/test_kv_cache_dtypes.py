"""Per-token-head KV cache dtypes: one byte per element plus an fp32 scale per head's K and V, as vLLM's
Triton attention backend lays a page out (`vllm 0.20.0 v1/kv_cache_interface.py::AttentionSpec.
page_size_bytes`, `vllm 0.28.0 v1/attention/backends/triton_attn.py::TritonAttentionBackend.customize_spec`)."""

from __future__ import annotations

import pytest

from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.kv_cache import head_slot_bytes, kv_geometry
from colo.vllm.rules import rules_for

BLOCK = 16
FP32 = 4


def _vllm_page(block: int, kv_heads: int, head_size: int, element_bytes: int) -> int:
    """The 0.20-0.27 page: K and V elements, plus `2 * block_size * num_kv_heads * 4` bytes of scales."""
    return 2 * block * kv_heads * head_size * element_bytes + 2 * block * kv_heads * FP32


@pytest.mark.parametrize("dtype", ["int8_per_token_head", "fp8_per_token_head"])
def test_a_per_token_head_dtype_adds_one_fp32_scale_per_k_and_per_v_head_slot(dtype: str) -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")  # 36 layers, 8 KV heads of 128
    geometry = kv_geometry(arch, dtype, rules=rules_for("0.22.0"))
    assert geometry is not None
    assert geometry.bytes_per_block == arch.num_layers * _vllm_page(BLOCK, 8, 128, 1)


def test_the_scales_make_a_per_token_head_page_larger_than_plain_fp8_by_four_bytes_a_head() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    plain = kv_geometry(arch, "fp8", rules=rules_for("0.22.0"))
    scaled = kv_geometry(arch, "int8_per_token_head", rules=rules_for("0.22.0"))
    assert plain is not None and scaled is not None
    per_block_heads = arch.num_layers * 2 * BLOCK * arch.num_kv_heads
    assert scaled.bytes_per_block - plain.bytes_per_block == per_block_heads * FP32


def test_the_scales_split_over_tensor_parallel_ranks_with_their_heads() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    tp1 = kv_geometry(arch, "int8_per_token_head", rules=rules_for("0.22.0"))
    tp4 = kv_geometry(arch, "int8_per_token_head", tensor_parallel_size=4, rules=rules_for("0.22.0"))
    assert tp1 is not None and tp4 is not None
    assert tp1.bytes_per_block == 4 * tp4.bytes_per_block


def test_dtypes_without_scales_store_only_their_elements() -> None:
    assert head_slot_bytes(128, 1, "fp8_e4m3") == 128
    assert head_slot_bytes(128, 2, "auto") == 256
    assert head_slot_bytes(128, 1, "int8_per_token_head") == 132
