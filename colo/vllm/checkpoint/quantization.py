"""A checkpoint's quantization, as its config declares it (before vLLM picks a kernel for a release and a GPU).

`QuantizationScheme` holds what the quantization block says, in vLLM's own terms: the method name vLLM starts
from (`quant_method`, normalised as vLLM does), the weight formats and the layers each covers, the layers it
leaves in full precision and the matching rule the method applies to that list. What the weights then take on
the GPU depends on the kernel vLLM chooses per release and GPU: colo.vllm.checkpoint.quant_methods resolves the method,
colo.vllm.process.quant_bytes sizes each format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The weight payload: floating-point 8 bit, packed integers (GPTQ/AWQ/compressed-tensors WNA16 and W8A8 int8),
# NVFP4 (e2m1 + fp8 scale per 16), MXFP4/MXFP8 (e8m0 scale per 32), bitsandbytes blocks.
WeightKind = Literal["fp8", "int", "nvfp4", "mxfp4", "mxfp8", "bnb"]
# Where scales sit: one per tensor, one per output row, one per `group_size` inputs, one per 2-D block.
Strategy = Literal["tensor", "channel", "group", "block"]
# How a method matches its list of full-precision layers (docs/vllm-memory-rules.md, "Quantized checkpoints").
IgnoreRule = Literal[
    "exact", "compressed_tensors", "substring", "modelopt", "bitsandbytes", "every_linear", "none"
]
# Where the block sits: config.json, only its text_config (multimodal), or a file beside config.json.
DeclaredIn = Literal["config.json", "text_config", "hf_quant_config.json", "quantize_config.json", ""]


@dataclass(frozen=True)
class WeightFormat:
    """How one quantized weight is stored: payload bits, where its scales sit, zero points, activation order."""

    kind: WeightKind
    bits: int
    strategy: Strategy
    group_size: int = 0  # inputs per scale for the group strategy
    block: tuple[int, int] = (0, 0)  # fp8 block (output rows, inputs) per scale
    symmetric: bool = True  # False: a packed zero point is stored beside every scale
    act_order: bool = False  # GPTQ desc_act / compressed-tensors actorder "group": g_idx is kept
    weight_only: bool = True  # activations stay in the model dtype (W4A16, W8A16)
    double_quant: bool = False  # bitsandbytes: absmax itself quantized in the checkpoint

    def groups_along(self, inputs: int) -> int:
        """Scales per output row for `inputs` input features."""
        if self.strategy == "group" and 0 < self.group_size < inputs:
            return -(-inputs // self.group_size)
        if self.strategy == "block" and self.block[1]:
            return -(-inputs // self.block[1])
        return 1


@dataclass(frozen=True)
class QuantGroup:
    """One format and the layers it covers: compressed-tensors `targets` (class-name substrings, exact module
    names or `re:` patterns); other methods have a single group that covers every quantizable layer."""

    targets: tuple[str, ...]
    weights: WeightFormat


@dataclass(frozen=True)
class GptqDynamicRule:
    """One entry of a GPTQModel `dynamic` map: a regex on the module prefix; `-:` leaves the module unquantized,
    otherwise its keys override bits, group size, desc_act or sym for the modules it matches."""

    pattern: str
    skip: bool
    bits: int | None = None
    group_size: int | None = None
    desc_act: bool | None = None
    sym: bool | None = None


@dataclass(frozen=True)
class QuantizationScheme:
    """A checkpoint's quantization block, read once; `method` is "none" for a full-precision checkpoint."""

    method: str = "none"
    declared_in: DeclaredIn = ""
    groups: tuple[QuantGroup, ...] = ()
    ignore: tuple[str, ...] = ()
    ignore_rule: IgnoreRule = "none"
    # GPTQ: the four keys Marlin conversion needs are all present (`is_gptq_marlin_compatible`).
    marlin_keys_present: bool = False
    lm_head_quantized: bool = False  # GPTQ/AWQ `lm_head: true`
    dynamic: tuple[GptqDynamicRule, ...] = ()
    modules_in_block_to_quantize: tuple[str, ...] | None = None
    quant_algo: str = ""  # ModelOpt
    kv_cache_quant_algo: str = ""  # ModelOpt: FP8 makes kv_cache_dtype auto resolve to fp8 (vLLM 0.14+)
    online: bool = False  # quantized by vLLM at load time from a full-precision checkpoint

    @property
    def quantized(self) -> bool:
        return self.method != "none"

    @property
    def primary(self) -> WeightFormat | None:
        """The format of the first group: the one non-compressed-tensors methods use everywhere."""
        return self.groups[0].weights if self.groups else None


UNQUANTIZED = QuantizationScheme()
