"""LoRA slots, as vllm 0.33.0 allocates them at load (colo/vllm/process/lora.py), checked by hand."""

from __future__ import annotations

import pytest

from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.lora import LoraRefused, LoraSlots, lora_slot_bytes


def test_qwen3_8b_slots_are_rank_times_inputs_per_slice_plus_outputs_on_every_linear() -> None:
    """36 layers of hidden 4096, 32 query and 8 KV heads of 128, intermediate 12288: per layer
    qkv 3 x 4096 + 6144, o 4096 + 4096, gate_up 2 x 4096 + 24576, down 12288 + 4096 elements per rank of LoRA."""
    per_layer = (3 * 4096 + 6144) + (4096 + 4096) + (2 * 4096 + 24576) + (12288 + 4096)
    arch = catalog_architecture("Qwen/Qwen3-8B")
    slots = LoraSlots(max_loras=4, max_lora_rank=16, dtype_bytes=2)
    assert lora_slot_bytes(arch, slots) == 4 * 16 * 2 * 36 * per_layer
    with_embeddings = LoraSlots(max_loras=4, max_lora_rank=16, dtype_bytes=2, wraps_embeddings=True)
    assert lora_slot_bytes(arch, with_embeddings) - lora_slot_bytes(arch, slots) == 4 * 16 * 2 * 2 * (
        151936 + 4096
    )


def test_slots_scale_with_max_loras_and_rank_and_split_over_ranks() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    one = lora_slot_bytes(arch, LoraSlots(max_loras=1, max_lora_rank=8))
    assert lora_slot_bytes(arch, LoraSlots(max_loras=3, max_lora_rank=64)) == one * 3 * 8
    assert lora_slot_bytes(arch, LoraSlots(), tensor_parallel_size=2) < lora_slot_bytes(arch, LoraSlots())


def test_fused_moe_experts_take_slots_per_expert() -> None:
    arch = catalog_architecture(
        "Qwen/Qwen3-30B-A3B"
    )  # 48 layers of 128 experts, hidden 2048, intermediate 768
    dense = catalog_architecture("Qwen/Qwen3-8B")
    moe_bytes = lora_slot_bytes(arch, LoraSlots(max_loras=1, max_lora_rank=1, dtype_bytes=1))
    assert moe_bytes >= 48 * 128 * (3 * 2048 + 3 * 768)
    assert moe_bytes > lora_slot_bytes(dense, LoraSlots(max_loras=1, max_lora_rank=1, dtype_bytes=1))


def test_a_vocabulary_vllm_refuses_for_lora_is_refused_in_its_words() -> None:
    gemma = catalog_architecture("google/gemma-3-27b-it")  # 262208 tokens
    with pytest.raises(LoraRefused, match="vocab size must be <= 258048"):
        lora_slot_bytes(gemma, LoraSlots(wraps_embeddings=True))
