"""On-GPU bytes of one quantized linear, per format, from real config blocks (Llama-3-8B down_proj shape)."""

from __future__ import annotations

from math import ceil

import pytest

from colo.vllm.checkpoint.quant_config import read_quantization
from colo.vllm.checkpoint.quant_matching import ModuleRef, module_format
from colo.vllm.checkpoint.quant_methods import quant_release, resolve_quantization
from colo.vllm.checkpoint.quantization import QuantizationScheme, WeightFormat
from colo.vllm.process.quant_bytes import Layout, linear_checkpoint_bytes, linear_gpu_bytes
from tests.vllm.checkpoint.quant_fixtures import scheme_of

K, N = 14336, 4096  # Llama-3-8B down_proj: inputs, outputs
P = K * N
DOWN = ModuleRef("model.layers.0.mlp.down_proj")
H100, A100, B200 = (9, 0), (8, 0), (10, 0)


def _gpu_bytes(
    scheme: QuantizationScheme,
    version: str = "0.20.0",
    capability: tuple[int, int] = H100,
    flag: str | None = None,
) -> int:
    resolved = resolve_quantization(scheme, flag, vllm_version=version, capability=capability)
    layout = Layout(resolved.method, resolved.release, capability[0] * 10 + capability[1], 2)
    return linear_gpu_bytes(module_format(resolved.scheme, DOWN, resolved.release), K, N, layout)


def test_fp8_blocks_keep_one_fp32_scale_per_128x128_block_on_fp8_hardware() -> None:
    assert _gpu_bytes(scheme_of("fp8-block")) == P + 4 * ceil(N / 128) * ceil(K / 128)


def test_block_fp8_below_capability_8_9_stores_bf16_scales_per_k_block_and_output_row() -> None:
    assert _gpu_bytes(scheme_of("fp8-block"), "0.9.0", A100) == P + 2 * (K // 128) * N


def test_block_fp8_below_capability_8_9_kept_its_blocks_in_0_8() -> None:
    assert _gpu_bytes(scheme_of("fp8-block"), "0.8.5", A100) == P + 4 * ceil(N / 128) * ceil(K / 128)


def test_per_tensor_fp8_becomes_per_row_bf16_scales_on_marlin() -> None:
    scheme = scheme_of("fp8-per-tensor-static")
    assert _gpu_bytes(scheme) == P + 4
    assert _gpu_bytes(scheme, capability=A100) == P + 2 * N


def test_compressed_tensors_w8a8_int8_keeps_an_fp32_scale_per_row() -> None:
    assert _gpu_bytes(scheme_of("ct-w8a8-int8-channel")) == P + 4 * N


def test_awq_keeps_scales_and_packed_zero_points_per_group() -> None:
    groups = K // 128
    assert _gpu_bytes(scheme_of("awq"), "0.20.0", A100) == P // 2 + 2 * groups * N + groups * N // 2


def test_gptq_on_marlin_drops_qzeros_and_keeps_sorted_g_idx_with_act_order() -> None:
    scheme = scheme_of("gptq")  # 4 bit, group 128, desc_act
    marlin = _gpu_bytes(scheme, "0.14.0", A100, flag="gptq_marlin")
    assert marlin == P // 2 + 2 * (K // 128) * N + 8 * K


def test_gptq_exllama_keeps_qzeros_and_g_idx_without_sort_indices() -> None:
    exllama = _gpu_bytes(scheme_of("gptq"), "0.14.0", A100, flag="gptq")
    groups = K // 128
    assert exllama == P // 2 + 2 * groups * N + groups * N // 2 + 4 * K


def test_a_group_size_of_minus_one_gives_one_scale_per_output_row() -> None:
    scheme = read_quantization(
        {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False, "sym": True}
    )
    assert _gpu_bytes(scheme, "0.14.0", A100) == P // 2 + 2 * N


def test_nvfp4_stores_an_fp8_scale_per_16_swizzled_on_blackwell() -> None:
    scheme = scheme_of("ct-nvfp4")
    assert _gpu_bytes(scheme, "0.20.0", B200) == P // 2 + ceil(N / 128) * 128 * ceil(K / 16 / 4) * 4 + 12
    assert _gpu_bytes(scheme, "0.20.0", H100) == P // 2 + N * K // 16 + 12


def test_modelopt_fp8_is_one_byte_per_weight_and_modelopt_nvfp4_half_a_byte() -> None:
    assert _gpu_bytes(scheme_of("modelopt-fp8"), "0.20.0") == P + 4
    assert _gpu_bytes(scheme_of("modelopt_fp4"), "0.20.0") == P // 2 + N * K // 16 + 12


def test_bitsandbytes_double_quant_is_dequantized_to_fp32_absmax_at_load() -> None:
    double = scheme_of("bitsandbytes-nf4-double-quant")
    assert _gpu_bytes(double, "0.20.0") == P // 2 + 4 * P // 64
    weights = double.primary
    assert weights is not None
    stored = linear_checkpoint_bytes(weights, K, N, "bitsandbytes", 2)
    assert stored < _gpu_bytes(double, "0.20.0")  # the file keeps absmax as uint8


def test_bitsandbytes_8_bit_is_one_byte_per_weight() -> None:
    assert _gpu_bytes(scheme_of("bitsandbytes-8bit"), "0.20.0") == P


def test_online_fp8_of_a_full_precision_checkpoint_is_per_tensor() -> None:
    assert _gpu_bytes(QuantizationScheme(), "0.20.0", flag="fp8_per_tensor") == P + 4


@pytest.mark.parametrize("kind", ["mxfp4", "mxfp8"])
def test_mx_formats_add_one_e8m0_byte_per_32_weights(kind: str) -> None:
    weights = WeightFormat(kind, 4 if kind == "mxfp4" else 8, "group", 32)  # type: ignore[arg-type]
    layout = Layout("compressed-tensors", quant_release("0.24.0"), 90, 2)
    payload = P // 2 if kind == "mxfp4" else P
    assert linear_gpu_bytes(weights, K, N, layout) == payload + P // 32


def test_unquantized_layers_take_the_model_dtype() -> None:
    layout = Layout("none", quant_release("0.20.0"), 90, 2)
    assert linear_gpu_bytes(None, K, N, layout) == 2 * P
