"""A model's geometry, read from a Hugging Face config.json: everything the budget needs, nothing else.

The parser understands the config shapes of the families colo ships in its catalog (Llama, Mistral, Qwen2/3,
Qwen3-MoE, Qwen3.5/3.6 hybrid Gated DeltaNet, Gemma 3/4, DeepSeek-style MLA, XLM-RoBERTa encoders). Unknown
architectures still work when they follow the common Llama-style keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "fp8": 1}


@dataclass(frozen=True)
class MoeGeometry:
    num_experts: int
    experts_per_token: int
    moe_intermediate_size: int
    shared_expert_intermediate_size: int = 0
    moe_layers: int = 0  # layers whose MLP is sparse; the rest are dense


@dataclass(frozen=True)
class GdnGeometry:
    """Gated DeltaNet (linear attention) state geometry, per layer."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    ssm_dtype_bytes: int


@dataclass(frozen=True)
class MlaGeometry:
    kv_lora_rank: int
    qk_rope_head_dim: int
    q_lora_rank: int | None = None
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128


@dataclass(frozen=True)
class ModelArchitecture:
    model_id: str
    architecture: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    dtype: str = "bfloat16"
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    attn_output_gate: bool = False  # q_proj also emits a per-head output gate (Qwen3-Next, Qwen3.5/3.6)
    encoder_only: bool = False
    # Layer kinds. full + sliding + linear == num_layers.
    full_attention_layers: int = 0
    sliding_attention_layers: int = 0
    sliding_window: int | None = None
    linear_attention_layers: int = 0
    # Global (full) layers may use a different KV geometry than local ones (Gemma 4).
    global_num_kv_heads: int | None = None
    global_head_dim: int | None = None
    global_k_eq_v: bool = False
    moe: MoeGeometry | None = None
    gdn: GdnGeometry | None = None
    mla: MlaGeometry | None = None
    mtp_layers: int = 0
    vision_parameters: int = 0
    rotary_dim: int | None = None  # partial rotary embeddings cache fewer dimensions
    quantization: str = "none"
    quant_group_size: int = 128
    unquantized_modules: tuple[str, ...] = ()
    checkpoint_bytes: int | None = None  # exact bytes of the weights when read from safetensors headers
    checkpoint_bytes_by_part: Mapping[str, int] = field(default_factory=dict)
    source: str = ""

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)

    @property
    def is_hybrid_linear(self) -> bool:
        return self.linear_attention_layers > 0

    def with_quantization(self, quantization: str) -> ModelArchitecture:
        return replace(self, quantization=quantization)


class ArchitectureError(ValueError):
    """The config.json lacks a key the budget needs; the message names the key."""


def _need(cfg: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    raise ArchitectureError(f"config.json has none of {', '.join(keys)}")


def _quantization(cfg: Mapping[str, Any]) -> tuple[str, int, tuple[str, ...]]:
    qc = cfg.get("quantization_config") or {}
    if not qc:
        return "none", 128, ()
    method = str(qc.get("quant_method", "")).lower()
    ignored = tuple(qc.get("modules_to_not_convert") or qc.get("ignored_layers") or qc.get("ignore") or ())
    group = int(qc.get("group_size") or (qc.get("weight_block_size") or [128])[0] or 128)
    if method == "fp8":
        return "fp8", group, ignored
    if method in ("awq", "awq_marlin"):
        return "awq", group, ignored
    if method in ("gptq", "gptq_marlin"):
        return "gptq", group, ignored
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        for group_cfg in groups.values():
            weights = group_cfg.get("weights") or {}
            if weights.get("type") == "float" and weights.get("num_bits") == 8:
                return "fp8", group, ignored
            if weights.get("num_bits") == 4:
                return "gptq", int(weights.get("group_size") or 128), ignored
        return "fp8", group, ignored
    if method in ("modelopt", "modelopt_fp4", "nvfp4"):
        return "nvfp4", 16, ignored
    return method or "none", group, ignored


def from_hf_config(raw: Mapping[str, Any], model_id: str, source: str = "") -> ModelArchitecture:
    """Build the geometry from a config.json mapping (multimodal configs: the text_config is used)."""
    top = raw
    cfg: Mapping[str, Any] = raw.get("text_config") or raw
    archs = list(top.get("architectures") or cfg.get("architectures") or ["unknown"])
    architecture = str(archs[0])
    hidden = int(_need(cfg, "hidden_size", "d_model"))
    layers = int(_need(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    heads = int(_need(cfg, "num_attention_heads", "n_head"))
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    intermediate = int(cfg.get("intermediate_size") or 4 * hidden)
    vocab = int(_need(cfg, "vocab_size") if "vocab_size" in cfg else _need(top, "vocab_size"))
    max_pos = int(cfg.get("max_position_embeddings") or top.get("max_position_embeddings") or 8192)
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or top.get("torch_dtype") or "bfloat16")
    tie = bool(top.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False)))
    encoder_only = any(name in architecture for name in ("Roberta", "Bert", "XLMRoberta")) or bool(
        cfg.get("is_encoder_only")
    )
    quantization, group, ignored = _quantization(top if "quantization_config" in top else cfg)

    full = sliding = linear = 0
    window: int | None = cfg.get("sliding_window")
    layer_types = cfg.get("layer_types")
    if layer_types:
        for kind in layer_types[:layers]:
            if kind in ("linear_attention", "mamba", "gated_deltanet"):
                linear += 1
            elif kind in ("sliding_attention", "local_attention", "chunked_attention"):
                sliding += 1
            else:
                full += 1
    elif cfg.get("full_attention_interval"):
        interval = int(cfg["full_attention_interval"])
        full = layers // interval
        linear = layers - full
    elif cfg.get("sliding_window_pattern") and window:
        pattern = int(cfg["sliding_window_pattern"])
        full = layers // pattern
        sliding = layers - full
    elif window and cfg.get("use_sliding_window", True) and "Qwen" not in architecture:
        sliding = layers
    else:
        full = layers
    if sliding == 0:
        window = None

    moe = None
    n_experts = cfg.get("num_experts") or cfg.get("n_routed_experts") or cfg.get("num_local_experts")
    if n_experts:
        moe_layers = layers
        if cfg.get("first_k_dense_replace"):
            moe_layers = layers - int(cfg["first_k_dense_replace"])
        elif cfg.get("decoder_sparse_step") and int(cfg["decoder_sparse_step"]) > 1:
            moe_layers = layers // int(cfg["decoder_sparse_step"])
        shared = int(cfg.get("shared_expert_intermediate_size") or 0)
        if not shared and cfg.get("n_shared_experts"):
            shared = int(cfg["n_shared_experts"]) * int(cfg.get("moe_intermediate_size") or intermediate)
        moe = MoeGeometry(
            num_experts=int(n_experts),
            experts_per_token=int(cfg.get("num_experts_per_tok") or cfg.get("top_k_experts") or 2),
            moe_intermediate_size=int(cfg.get("moe_intermediate_size") or intermediate),
            shared_expert_intermediate_size=shared,
            moe_layers=moe_layers,
        )

    gdn = None
    if linear:
        ssm_dtype = str(cfg.get("mamba_ssm_dtype") or dtype)
        gdn = GdnGeometry(
            num_key_heads=int(_need(cfg, "linear_num_key_heads")),
            num_value_heads=int(_need(cfg, "linear_num_value_heads")),
            key_head_dim=int(_need(cfg, "linear_key_head_dim")),
            value_head_dim=int(_need(cfg, "linear_value_head_dim")),
            conv_kernel=int(cfg.get("linear_conv_kernel_dim") or 4),
            ssm_dtype_bytes=DTYPE_BYTES.get(ssm_dtype, 2),
        )

    mla = None
    if cfg.get("kv_lora_rank"):
        mla = MlaGeometry(
            kv_lora_rank=int(cfg["kv_lora_rank"]),
            qk_rope_head_dim=int(cfg.get("qk_rope_head_dim") or 64),
            q_lora_rank=int(cfg["q_lora_rank"]) if cfg.get("q_lora_rank") else None,
            qk_nope_head_dim=int(cfg.get("qk_nope_head_dim") or 128),
            v_head_dim=int(cfg.get("v_head_dim") or 128),
        )

    vision = 0
    vision_cfg = top.get("vision_config")
    if isinstance(vision_cfg, Mapping) and vision_cfg.get("hidden_size"):
        vision = _vision_parameters(vision_cfg, hidden)

    return ModelArchitecture(
        model_id=model_id,
        architecture=architecture,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        dtype=dtype,
        tie_word_embeddings=tie,
        attention_bias=bool(cfg.get("attention_bias", "Qwen2" in architecture)),
        attn_output_gate=bool(cfg.get("attn_output_gate", linear > 0 and "Qwen" in architecture)),
        encoder_only=encoder_only,
        full_attention_layers=0 if encoder_only else full,
        sliding_attention_layers=sliding,
        sliding_window=int(window) if window else None,
        linear_attention_layers=linear,
        global_num_kv_heads=_opt_int(cfg.get("num_global_key_value_heads")),
        global_head_dim=_opt_int(cfg.get("global_head_dim")),
        global_k_eq_v=bool(cfg.get("attention_k_eq_v", False)),
        moe=moe,
        gdn=gdn,
        mla=mla,
        mtp_layers=int(cfg.get("mtp_num_hidden_layers") or cfg.get("num_nextn_predict_layers") or 0),
        vision_parameters=vision,
        rotary_dim=_rotary_dim(cfg, head_dim),
        quantization=quantization,
        quant_group_size=group,
        unquantized_modules=ignored,
        source=source,
    )


def _rotary_dim(cfg: Mapping[str, Any], head_dim: int) -> int:
    rope = cfg.get("rope_parameters") or {}
    factor = (
        cfg.get("partial_rotary_factor")
        or (rope.get("partial_rotary_factor") if isinstance(rope, Mapping) else None)
        or 1.0
    )
    return int(head_dim * float(factor))


def _opt_int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _vision_parameters(vision: Mapping[str, Any], text_hidden: int) -> int:
    """A ViT's parameters from its geometry: blocks of attention + MLP, patch embedding and a merger."""
    hidden = int(vision["hidden_size"])
    depth = int(vision.get("depth") or vision.get("num_hidden_layers") or 0)
    inter = int(vision.get("intermediate_size") or 4 * hidden)
    patch = int(vision.get("patch_size") or 14)
    temporal = int(vision.get("temporal_patch_size") or 1)
    channels = int(vision.get("in_channels") or vision.get("num_channels") or 3)
    per_block = 4 * hidden * hidden + 2 * hidden * inter + 4 * hidden
    merge = int(vision.get("spatial_merge_size") or 1)
    merger_in = hidden * merge * merge
    out = int(vision.get("out_hidden_size") or text_hidden)
    merger = merger_in * merger_in + merger_in * out
    return depth * per_block + channels * temporal * patch * patch * hidden + merger
