"""Bytes of weights a vLLM process holds on the GPU after loading ("Model loading took X GiB").

vLLM measures torch-allocated bytes after `load_model`: the weights in their on-GPU form, including packed
quantized tensors and their scales, for every expert of an MoE model (experts are never loaded lazily).
When safetensors headers were read the checkpoint's own tensor bytes are used; otherwise the bytes follow
from the geometry, part by part, so quantization applies only to the linear layers it really covers.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog.architecture import ModelArchitecture

VOCAB_PADDING = 64  # vLLM's VocabParallelEmbedding pads the vocabulary to a multiple of 64


# Bytes per parameter of a quantized linear weight, scales included.
#   fp8: 1 byte + an fp32 scale per 128x128 block (or per channel): 4/16384 per parameter.
#   awq/gptq int4: 0.5 byte + an fp16 scale and a packed 4-bit zero per group of `group` inputs.
#   nvfp4: 0.5 byte + an fp8 scale per 16 values.
def _linear_bytes_per_param(quantization: str, dtype_bytes: int, group: int) -> float:
    if quantization == "fp8":
        return 1.0 + 4.0 / (128 * 128)
    if quantization in ("awq", "gptq"):
        return 0.5 + (2.0 + 0.5) / group
    if quantization == "nvfp4":
        return 0.5 + 1.0 / 16
    return float(dtype_bytes)


@dataclass(frozen=True)
class WeightParts:
    """Parameter counts by part of the model."""

    embedding: int
    lm_head: int
    attention_linear: int
    mlp_linear: int
    expert_linear: int
    router: int
    linear_attention_linear: int
    small_tensors: int  # norms, biases, conv kernels, decay parameters: always kept in model dtype
    mtp: int
    vision: int

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention_linear
            + self.mlp_linear
            + self.expert_linear
            + self.router
            + self.linear_attention_linear
            + self.small_tensors
            + self.mtp
            + self.vision
        )


@dataclass(frozen=True)
class WeightEstimate:
    bytes: int
    parameters: int
    method: str  # "safetensors" or "geometry"
    detail: dict[str, int]


def _attention_params(arch: ModelArchitecture, global_layer: bool) -> tuple[int, int]:
    """(linear params, small params) of one attention block."""
    h = arch.hidden_size
    if arch.mla is not None:
        m = arch.mla
        q_dim = arch.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = h * m.q_lora_rank + m.q_lora_rank * q_dim if m.q_lora_rank else h * q_dim
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv += m.kv_lora_rank * arch.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
        out = arch.num_attention_heads * m.v_head_dim * h
        return q + kv + out, m.kv_lora_rank + (m.q_lora_rank or 0)
    head_dim = arch.global_head_dim if global_layer and arch.global_head_dim else arch.head_dim
    kv_heads = arch.global_num_kv_heads if global_layer and arch.global_num_kv_heads else arch.num_kv_heads
    q_out = arch.num_attention_heads * head_dim
    kv_out = kv_heads * head_dim * (1 if global_layer and arch.global_k_eq_v else 2)
    gate = q_out if arch.attn_output_gate else 0
    linear = h * (q_out + gate + kv_out) + q_out * h
    small = 2 * head_dim  # q/k norms (Qwen3, Gemma 3/4); a few KiB where a model has none
    if arch.attention_bias:
        small += q_out + kv_out
    return linear, small


def _gdn_params(arch: ModelArchitecture) -> tuple[int, int]:
    g = arch.gdn
    assert g is not None
    key_dim = g.num_key_heads * g.key_head_dim
    value_dim = g.num_value_heads * g.value_head_dim
    in_proj = arch.hidden_size * (2 * key_dim + 2 * value_dim + 2 * g.num_value_heads)
    out_proj = value_dim * arch.hidden_size
    conv = (2 * key_dim + value_dim) * g.conv_kernel
    small = conv + 2 * g.num_value_heads + g.value_head_dim
    return in_proj + out_proj, small


def _embedding_params(arch: ModelArchitecture, *, pooling: bool) -> tuple[int, int, int]:
    """(embedding, lm_head, small) parameters; encoders add position and token-type embeddings and a norm."""
    h = arch.hidden_size
    vocab = -(-arch.vocab_size // VOCAB_PADDING) * VOCAB_PADDING
    embedding = vocab * h
    small = h  # final norm
    if arch.encoder_only:
        embedding += (arch.max_position_embeddings + 2) * h + 2 * h + 2 * h
    lm_head = 0 if (arch.tie_word_embeddings or pooling or arch.encoder_only) else vocab * h
    return embedding, lm_head, small


def _mixer_params(arch: ModelArchitecture) -> tuple[int, int, int]:
    """(attention linear, linear-attention linear, small) parameters of every layer's token mixer."""
    attention = linear_attn = small = 0
    attn_layers = arch.num_layers - arch.linear_attention_layers
    globals_ = arch.full_attention_layers if arch.sliding_attention_layers else 0
    for index in range(attn_layers):
        lin, sm = _attention_params(arch, global_layer=index < globals_)
        attention += lin
        small += sm
    if arch.linear_attention_layers:
        lin, sm = _gdn_params(arch)
        linear_attn = lin * arch.linear_attention_layers
        small += sm * arch.linear_attention_layers
    return attention, linear_attn, small


def _mlp_params(arch: ModelArchitecture) -> tuple[int, int, int, int]:
    """(dense and shared-expert MLP, routed experts, router, small) parameters of every layer."""
    h = arch.hidden_size
    moe_layers = arch.moe.moe_layers if arch.moe else 0
    dense_layers = arch.num_layers - moe_layers
    gated = 2 if arch.encoder_only else 3  # BERT-style MLPs have no gate projection
    mlp = dense_layers * gated * h * arch.intermediate_size
    experts = router = small = 0
    if arch.encoder_only:
        small += arch.num_layers * (arch.intermediate_size + h + 4 * h + 4 * h)
    if arch.moe:
        m = arch.moe
        experts = moe_layers * m.num_experts * 3 * h * m.moe_intermediate_size
        router = moe_layers * (h * m.num_experts + (h if m.shared_expert_intermediate_size else 0))
        mlp += moe_layers * 3 * h * m.shared_expert_intermediate_size
    return mlp, experts, router, small


def _mtp_params(arch: ModelArchitecture) -> int:
    """Multi-token-prediction layers: attention, an MLP like the model's, and the projection joining them."""
    h = arch.hidden_size
    per_layer_attention = _attention_params(arch, global_layer=False)
    m = arch.moe
    mlp_width = (
        m.num_experts * m.moe_intermediate_size + m.shared_expert_intermediate_size
        if m
        else arch.intermediate_size
    )
    per_layer_mlp = 3 * h * mlp_width
    return arch.mtp_layers * (sum(per_layer_attention) + per_layer_mlp + 2 * h * h + 4 * h)


def parameter_parts(arch: ModelArchitecture, *, pooling: bool, load_mtp: bool) -> WeightParts:
    embedding, lm_head, small = _embedding_params(arch, pooling=pooling)
    attention, linear_attn, mixer_small = _mixer_params(arch)
    mlp, experts, router, mlp_small = _mlp_params(arch)
    norms = arch.num_layers * 2 * arch.hidden_size  # input and post-attention norms
    mtp = _mtp_params(arch) if load_mtp and arch.mtp_layers else 0
    return WeightParts(
        embedding,
        lm_head,
        attention,
        mlp,
        experts,
        router,
        linear_attn,
        small + mixer_small + mlp_small + norms,
        mtp,
        arch.vision_parameters,
    )


_PART_MODULES = {
    "attention": {"self_attn", "attn", "q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj"},
    "mlp": {"mlp", "gate_up_proj", "down_proj", "up_proj", "gate_proj", "shared_expert"},
    "linear_attention": {"linear_attn", "in_proj_qkvz", "in_proj_qkv", "in_proj_z", "out_proj"},
    "experts": {"experts"},
}


def _is_unquantized(arch: ModelArchitecture, part: str) -> bool:
    """Checkpoints list modules they keep in full precision; a whole part counts only if named as such."""
    names = _PART_MODULES[part]
    return any(module.rsplit(".", 1)[-1] in names for module in arch.unquantized_modules)


def estimate_weights(
    arch: ModelArchitecture, *, pooling: bool = False, load_mtp: bool = False
) -> WeightEstimate:
    """Bytes on the GPU after loading. Rotary caches are included; transient load-time copies are not."""
    parts = parameter_parts(arch, pooling=pooling, load_mtp=load_mtp)
    rotary_dim = arch.rotary_dim or arch.head_dim
    rotary = 0 if arch.encoder_only else arch.max_position_embeddings * rotary_dim * arch.dtype_bytes
    if arch.checkpoint_bytes is not None and arch.checkpoint_bytes_by_part:
        by_part = dict(arch.checkpoint_bytes_by_part)
        skipped = 0
        if not load_mtp:
            skipped += by_part.get("mtp", 0)
        if pooling and not arch.tie_word_embeddings:
            skipped += by_part.get("lm_head", 0)
        total = arch.checkpoint_bytes - skipped + rotary
        return WeightEstimate(
            total, parts.total, "safetensors", {**by_part, "skipped": skipped, "rotary": rotary}
        )

    full = arch.dtype_bytes
    quant = arch.quantization

    def linear(part_params: int, part: str) -> int:
        if quant == "none" or _is_unquantized(arch, part):
            return part_params * full
        return round(part_params * _linear_bytes_per_param(quant, full, arch.quant_group_size))

    detail = {
        "embedding": parts.embedding * full,
        "lm_head": parts.lm_head * full,
        "attention": linear(parts.attention_linear, "attention"),
        "mlp": linear(parts.mlp_linear, "mlp"),
        "experts": linear(parts.expert_linear, "experts"),
        "router": parts.router * full,
        "linear_attention": linear(parts.linear_attention_linear, "linear_attention"),
        "small_tensors": parts.small_tensors * full,
        "mtp": linear(parts.mtp, "mlp"),
        "vision": parts.vision * full,
        "rotary": rotary,
    }
    return WeightEstimate(sum(detail.values()), parts.total, "geometry", detail)
