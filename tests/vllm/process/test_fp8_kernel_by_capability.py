"""FP8 weights take the layout of the kernel vLLM picks for the GPU's compute capability and the release.

Below 8.9 every FP8 layer runs weight-only through Marlin (model-dtype scales). From vLLM 0.29.0 block-wise
FP8 linear layers run through Marlin below 9.0, so on Ada (8.9) too: 0.29.0 drops the `>= 89` refusal from
MarlinFP8ScaledMMLinearKernel.is_supported and its block-FP8 kernel list reaches Marlin before Triton when
no DeepGEMM or CUTLASS block kernel (9.0+) applies. Fused-MoE experts keep Triton on 8.9.
"""

from __future__ import annotations

from colo.catalog import gpu
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.weights import estimate_weights


def _weights(model: str, gpu_name: str, version: str) -> int:
    return estimate_weights(catalog_architecture(model), gpu=gpu(gpu_name), vllm_version=version).bytes


def test_block_fp8_on_ada_is_native_up_to_0_28_and_marlin_from_0_29() -> None:
    dense = "Qwen/Qwen3-8B-FP8"  # 128x128 blocks
    assert _weights(dense, "L40S", "0.28.0") == _weights(dense, "H100-SXM", "0.28.0")
    assert _weights(dense, "L40S", "0.29.0") > _weights(dense, "L40S", "0.28.0")
    assert _weights(dense, "L40S", "0.29.0") == _weights(dense, "A100-80GB", "0.29.0")  # Marlin's layout
    assert _weights(dense, "H100-SXM", "0.29.0") == _weights(dense, "H100-SXM", "0.28.0")


def test_channel_wise_fp8_stays_native_on_ada_in_every_release() -> None:
    channel = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"  # compressed-tensors, one scale per output row
    assert _weights(channel, "L40S", "0.29.0") == _weights(channel, "H100-SXM", "0.29.0")
    assert _weights(channel, "A100-80GB", "0.29.0") != _weights(channel, "L40S", "0.29.0")  # Marlin below 8.9


def test_block_fp8_experts_keep_triton_on_ada_after_0_29() -> None:
    moe = "Qwen/Qwen3-30B-A3B-FP8"
    on_ada = _weights(moe, "L40S", "0.29.0") - _weights(moe, "L40S", "0.28.0")
    dense_part = _weights(moe, "L40S", "0.29.0") - _weights(moe, "H100-SXM", "0.29.0")
    assert on_ada == dense_part > 0  # only the attention linears moved to Marlin
    assert _weights(moe, "A100-80GB", "0.29.0") > _weights(moe, "L40S", "0.29.0")  # experts on Marlin there
