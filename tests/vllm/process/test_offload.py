"""`--cpu-offload-gb`, as vllm 0.33.0's UVA offloader moves parameters off the GPU (colo/vllm/process/offload.py)."""

from __future__ import annotations

import pytest

from colo.catalog import GIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.offload import OffloadRefused, cpu_offloaded_bytes
from colo.vllm.process.weights import estimate_weights

QWEN3_8B_LAYER = [4096 * 6144, 4096 * 4096, 4096 * 24576, 12288 * 4096]  # qkv, o, gate_up, down (elements)


def test_parameters_move_whole_until_the_limit_is_reached() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    # 0.1 GiB: qkv (48 MiB) is below it, o (32 MiB) still starts below it, gate_up (192 MiB) crosses it whole
    assert cpu_offloaded_bytes(arch, 0.1) == 2 * (QWEN3_8B_LAYER[0] + QWEN3_8B_LAYER[1] + QWEN3_8B_LAYER[2])
    assert cpu_offloaded_bytes(arch, 0) == 0


def test_at_least_the_limit_and_at_most_one_parameter_more_moves() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    largest = 2 * max(QWEN3_8B_LAYER)
    for gib in (0.5, 1, 2.5, 4, 7.3):
        moved = cpu_offloaded_bytes(arch, gib)
        assert gib * GIB <= moved < gib * GIB + largest


def test_only_the_decoder_layers_move_so_the_embedding_and_head_stay() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    weights = estimate_weights(arch).bytes
    everything = cpu_offloaded_bytes(arch, 1000)
    assert everything == 2 * 36 * sum(QWEN3_8B_LAYER)
    assert weights - everything > 2 * 2 * 151936 * 4096 * 0.99  # embedding and untied lm_head


def test_quantized_and_multimodal_checkpoints_are_refused() -> None:
    with pytest.raises(OffloadRefused, match="unquantized"):
        cpu_offloaded_bytes(catalog_architecture("Qwen/Qwen3-8B-FP8"), 4)
    with pytest.raises(OffloadRefused, match="vision tower"):
        cpu_offloaded_bytes(catalog_architecture("google/gemma-3-27b-it"), 4)
