"""Bytes of one quantized linear layer (or fused-MoE expert stack) on the GPU, and in the checkpoint.

K = input features, N = output features of one linear on one tensor-parallel rank. Each formula lists the
tensors alive after vLLM's `process_weights_after_loading` ("Model loading took" measures them):

- fp8 (`vllm 0.14.0 model_executor/layers/quantization/fp8.py::Fp8LinearMethod`): fp8 weight + fp32 scales,
  one per tensor, per output row, or per 128x128 block. Below compute capability 8.9 vLLM runs FP8 through
  Marlin (`…/utils/marlin_utils_fp8.py::prepare_fp8_layer_for_marlin`): scales become model-dtype values,
  one per output row, or (K/128) x N for blocks (block FP8 only from 0.9.0; from 0.29.0 below 9.0, so on
  Ada too: quant_methods.yaml fp8_block_marlin_below).
- packed integers (GPTQ, AWQ, compressed-tensors WNA16): int32-packed weight + model-dtype scales per group;
  AWQ and asymmetric schemes keep packed zero points; GPTQ on Marlin drops qzeros and keeps g_idx plus its
  sort indices only with act order (`…/kernels/mixed_precision/marlin.py::MarlinLinearKernel.
  process_weights_after_loading`); GPTQ's exllama kernel (`--quantization gptq` up to 0.21) keeps qzeros;
  fused-MoE GPTQ keeps qzeros (`…/gptq_marlin.py::GPTQMarlinMoEMethod`).
- compressed-tensors W8A8 int8: int8 weight + an fp32 scale per output row (`CompressedTensorsW8A8Int8`).
- NVFP4: packed e2m1 + an fp8 scale per 16, swizzled on Blackwell to 128-row tiles and K/16 padded to 4
  (`…/utils/nvfp4_utils.py::swizzle_blockscale`), plus three fp32 scalars.
- MXFP4/MXFP8: payload + an e8m0 byte per 32.
- bitsandbytes 4-bit: packed nibbles + an fp32 absmax per 64 (double-quantized absmax is de-quantized at load,
  `vllm 0.14.0 model_executor/model_loader/bitsandbytes_loader.py::_dequantize_dq`); 8-bit: int8.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.vllm.checkpoint.quant_methods import QuantRelease
from colo.vllm.checkpoint.quantization import WeightFormat

FP32 = 4
FP8_NATIVE_CAPABILITY = 89  # below: FP8 runs weight-only through Marlin


def fp8_marlin(
    weights: WeightFormat, release: QuantRelease, capability: int, *, experts: bool = False
) -> bool:
    """Whether vLLM runs these FP8 weights weight-only through Marlin (bf16 activations, no input quantization)
    on a GPU of `capability` (major * 10 + minor): the one rule the weight layout and the graph kernels read.

    Fused-MoE experts keep Marlin below 8.9 only (vllm 0.34.0 fused_moe/oracle/fp8.py tries Triton before
    Marlin); block-wise linear layers follow the release's threshold (quant_methods.yaml fp8_block_marlin_below:
    vllm 0.22.0 kernels/linear/scaled_mm/marlin.py::MarlinFP8ScaledMMLinearKernel.is_supported refuses 8.9 and
    above; 0.29.0 drops that refusal, and 0.34.0 kernels/linear/__init__.py::_POSSIBLE_FP8_BLOCK_KERNELS tries
    Marlin after the 9.0-only block kernels); 0.8.x runs no block-wise FP8 through Marlin (fp8_block_marlin)."""
    if weights.strategy == "block" and not release.fp8_block_marlin:
        return False
    if weights.strategy == "block" and not experts:
        return capability < release.fp8_block_marlin_below
    return capability < FP8_NATIVE_CAPABILITY


@dataclass(frozen=True)
class Layout:
    """What decides a layout besides the format: vLLM's resolved method, the release, the GPU, the model dtype."""

    method: str
    release: QuantRelease
    capability: int  # major * 10 + minor
    dtype_bytes: int  # the dtype vLLM runs the model in
    file_dtype_bytes: int = 0  # the checkpoint's unquantized dtype where it differs (0: the same)

    @property
    def checkpoint_dtype_bytes(self) -> int:
        return self.file_dtype_bytes or self.dtype_bytes

    def fp8_marlin(self, weights: WeightFormat, *, experts: bool = False) -> bool:
        """`fp8_marlin` on this layout's release and GPU."""
        return fp8_marlin(weights, self.release, self.capability, experts=experts)

    @property
    def gptq_exllama(self) -> bool:
        """`--quantization gptq` (up to 0.21): the exllama kernel keeps qzeros, and g_idx without sort indices."""
        return self.method == "gptq"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _fp8_gpu(w: WeightFormat, k: int, n: int, layout: Layout, *, experts: bool = False) -> int:
    if layout.fp8_marlin(w, experts=experts):
        return k * n + layout.dtype_bytes * w.groups_along(k) * n
    return k * n + _fp8_scales(w, k, n) * FP32


def _fp8_scales(w: WeightFormat, k: int, n: int) -> int:
    if w.strategy == "block":
        return _cdiv(n, w.block[0]) * _cdiv(k, w.block[1])
    return n if w.strategy == "channel" else 1


def _int_gpu(w: WeightFormat, k: int, n: int, layout: Layout, *, experts: bool, scale_k: int) -> int:
    payload = k * n * w.bits // 8
    if not w.weight_only:  # W8A8 int8: per-row fp32 scales (per-tensor ones become per-row)
        return payload + FP32 * n
    groups = w.groups_along(scale_k)
    gptq = layout.method.startswith(("gptq", "auto_gptq"))
    zeros = not w.symmetric or (gptq and (experts or layout.gptq_exllama))
    index = (4 if layout.gptq_exllama else 8) * k if w.act_order else 0
    return payload + groups * n * layout.dtype_bytes + (groups * n * w.bits // 8 if zeros else 0) + index


def _nvfp4_gpu(w: WeightFormat, k: int, n: int, layout: Layout) -> int:
    scales = n * _cdiv(k, w.group_size)
    if layout.capability >= 100:  # CUTLASS FP4 swizzles the scales into 128 x 4 tiles
        scales = _cdiv(n, 128) * 128 * _cdiv(_cdiv(k, w.group_size), 4) * 4
    return k * n // 2 + scales + 3 * FP32


def _bnb_gpu(w: WeightFormat, k: int, n: int) -> int:
    if w.bits == 8:
        return k * n
    return k * n // 2 + FP32 * _cdiv(k * n, w.group_size)


def linear_gpu_bytes(
    w: WeightFormat | None, k: int, n: int, layout: Layout, *, experts: bool = False, full_k: int = 0
) -> int:
    """One linear (or one expert's projection) on the GPU. `full_k`: the whole layer's K, when a row-parallel
    shard repeats the full scales on every rank (act order on Marlin, `marlin_repeat_scales_on_all_ranks`)."""
    if w is None:
        return k * n * layout.dtype_bytes
    if w.kind == "fp8":
        return _fp8_gpu(w, k, n, layout, experts=experts)
    if w.kind == "int":
        scale_k = full_k if (w.act_order and full_k) else k
        return _int_gpu(w, k, n, layout, experts=experts, scale_k=scale_k)
    if w.kind == "nvfp4":
        return _nvfp4_gpu(w, k, n, layout)
    if w.kind == "bnb":
        return _bnb_gpu(w, k, n)
    per_32 = _cdiv(k * n, 32)
    return (k * n // 2 if w.kind == "mxfp4" else k * n) + per_32


def _int_checkpoint(w: WeightFormat, k: int, n: int, method: str, dtype_bytes: int) -> int:
    payload = k * n * w.bits // 8
    if not w.weight_only:
        return payload + dtype_bytes * n
    groups = w.groups_along(k)
    gptq = method.startswith(("gptq", "auto_gptq"))
    zeros = gptq or not w.symmetric  # GPTQ files always carry qzeros and g_idx
    index = 4 * k if (gptq or w.act_order) else 0
    return payload + groups * n * 2 + (groups * n * w.bits // 8 if zeros else 0) + index


def linear_checkpoint_bytes(w: WeightFormat | None, k: int, n: int, method: str, dtype_bytes: int) -> int:
    """The same linear as its safetensors tensors store it (scales as the exporters write them)."""
    if w is None:
        return k * n * dtype_bytes
    if w.kind == "fp8":
        return k * n + _fp8_scales(w, k, n) * FP32
    if w.kind == "int":
        return _int_checkpoint(w, k, n, method, dtype_bytes)
    if w.kind == "nvfp4":
        return k * n // 2 + n * _cdiv(k, w.group_size) + 2 * FP32
    if w.kind == "bnb":
        if w.bits == 8:
            return k * n + FP32 * n
        blocks = _cdiv(k * n, w.group_size)
        absmax = blocks + FP32 * _cdiv(blocks, 256) + FP32 * 256 if w.double_quant else FP32 * blocks
        return k * n // 2 + absmax + FP32 * 16
    per_32 = _cdiv(k * n, 32)
    return (k * n // 2 if w.kind == "mxfp4" else k * n) + per_32
