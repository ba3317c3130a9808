"""Read a Hugging Face config.json into a ModelArchitecture, one concern at a time.

The parser understands the config shapes of the families colo ships in its catalog (Llama, Mistral, Qwen2/3,
Qwen3-MoE, Qwen3.5/3.6 hybrid Gated DeltaNet, Gemma 3/4, DeepSeek-style MLA, XLM-RoBERTa encoders). Unknown
architectures still work when they follow the common Llama-style keys. Each step below reads one concern
(dimensions, layer kinds, attention variants, MoE, Gated DeltaNet, MLA, vision tower, quantization) and can be
called on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from colo.vllm.checkpoint.architecture import (
    DTYPE_BYTES,
    ArchitectureError,
    ConfigDtypes,
    GdnGeometry,
    MlaGeometry,
    ModelArchitecture,
    MoeGeometry,
    TrainedLength,
    VisionGeometry,
)
from colo.vllm.checkpoint.config_defaults import with_class_defaults
from colo.vllm.checkpoint.quant_config import read_quantization
from colo.vllm.checkpoint.quantization import UNQUANTIZED, QuantizationScheme

# The names vLLM's registry maps to an encoder class, every attention layer of which is ENCODER_ONLY (no KV cache
# spec), with that class: vllm 0.8.0 - 0.34.0 model_executor/models/registry.py (_EMBEDDING_MODELS,
# _CROSS_ENCODER_MODELS, _SEQUENCE_CLASSIFICATION_MODELS, _TOKEN_CLASSIFICATION_MODELS, _LATE_INTERACTION_MODELS),
# read in every mirrored release. The names that hold "Bert" or "Roberta" (BertModel, XLMRobertaModel,
# ModernBertModel, NomicBertModel, ColBERTJinaRobertaModel, ...) are all encoders too and are found by
# ENCODER_ONLY_NAMES; these are the others. Which release registers which name is architectures.yaml's concern.
ENCODER_ARCHITECTURES = {
    "BgeM3EmbeddingModel": "roberta.py::BgeM3EmbeddingModel",  # 0.15.0+
    "ErnieModel": "ernie.py::ErnieEmbeddingModel (a BertModel)",  # 0.18.0 - 0.23.0
    "ErnieForSequenceClassification": "ernie.py::ErnieForSequenceClassification",  # 0.18.0 - 0.23.0
    "ErnieForTokenClassification": "ernie.py::ErnieForTokenClassification",  # 0.18.0 - 0.23.0
    "GteModel": "bert_with_rope.py::SnowflakeGteNewModel",  # 0.9.0+ (0.8.5: bert.py::GteEmbeddingModel)
    "GteNewModel": "bert_with_rope.py::GteNewModel",  # 0.9.0+
    "GteNewForSequenceClassification": "bert_with_rope.py::GteNewForSequenceClassification",  # 0.10.2+
    "HF_ColBERT": "colbert.py::ColBERTModel (a BertModel)",  # 0.16.0+
}
# Substrings of the BERT family's names: every registered name holding one is an encoder (a name vLLM does not
# register reaches its Transformers backend, if anything)
ENCODER_ONLY_NAMES = ("Roberta", "Bert", "XLMRoberta")
# Encoders whose attention rotates q and k (no position-embedding table), by the vLLM module that builds them.
# NomicBertModel is a bert_with_rope.py class too, read apart (NOMIC_BERT): its config has GPT-2 style keys and
# vLLM sizes its rotary cache and its max_model_len by release (models/config.py::NomicBertModelConfig).
BERT_WITH_ROPE_ARCHITECTURES = ("GteModel", "GteNewModel", "GteNewForSequenceClassification")
NOMIC_BERT = "NomicBertModel"
# The checkpoint's NomicBertConfig (the remote code its auto_map names, configuration_hf_nomic_bert.py, which
# vLLM loads under --trust-remote-code) subclasses transformers' GPT2Config, whose attribute_map makes each of
# these names the GPT-2 key beside it: one attribute. A config.json stating both keeps the value of the name on
# the left: GPT2Config.__init__ sets its own n_* arguments, then PretrainedConfig.__init__ the file's other keys.
GPT2_ATTRIBUTE_MAP = {
    "hidden_size": "n_embd",
    "max_position_embeddings": "n_positions",
    "num_attention_heads": "n_head",
    "num_hidden_layers": "n_layer",
}
GPT2_DEFAULT_POSITIONS = 1024  # GPT2Config.__init__: n_positions=1024
# NomicBertConfig.__init__'s defaults for the keys vLLM reads (the remote configuration_hf_nomic_bert.py)
NOMIC_DEFAULTS = {"rotary_emb_fraction": 0.0, "qkv_proj_bias": True, "type_vocab_size": 2}
NOMIC_TRAINED_POSITIONS = 2048  # NomicBertModelConfig: getattr(config, "max_trained_positions", 2048)
MODERNBERT_ARCHITECTURES = (
    "ModernBertModel",
    "ModernBertForSequenceClassification",
    "ModernBertForTokenClassification",
    "ColBERTModernBertModel",
)
GEMMA3_TEXT_MODEL = "Gemma3TextModel"  # the Gemma 3 text encoder vLLM registers as a pooling model
LINEAR_LAYER_TYPES = ("linear_attention", "mamba", "gated_deltanet")
SLIDING_LAYER_TYPES = ("sliding_attention", "local_attention", "chunked_attention")


@dataclass(frozen=True)
class HfConfig:
    """A config.json: `top` is the whole file, `text` the decoder's part (`text_config` of multimodal
    configs, else the file itself)."""

    top: Mapping[str, Any]
    text: Mapping[str, Any]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> HfConfig:
        """The decoder's part with the keys it omits filled as transformers' config class fills them."""
        raw = nomic_bert_keys(raw)
        text = raw.get("text_config")
        if text:
            return cls(raw, with_class_defaults(text))
        top = with_class_defaults(raw)
        return cls(top, top)

    @property
    def architecture(self) -> str:
        names = list(self.top.get("architectures") or self.text.get("architectures") or ["unknown"])
        return str(names[0])


def nomic_bert_keys(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """A NomicBertModel config.json with the names vLLM reads its geometry by (vllm 0.10.1 - 0.34.0
    model_executor/models/config.py::NomicBertModelConfig.verify_and_update_config, from 0.14.0
    verify_and_update_model_config): GPT2Config's attribute_map (hidden_size, num_attention_heads,
    num_hidden_layers, max_position_embeddings, the last read as n_positions too), and `intermediate_size =
    config.n_inner`. Any other config as it is."""
    names = raw.get("architectures") or ()
    if not names or names[0] != NOMIC_BERT:
        return raw
    keys = {**NOMIC_DEFAULTS, **raw}
    for name, gpt2 in GPT2_ATTRIBUTE_MAP.items():
        if name not in raw and gpt2 in raw:
            keys[name] = raw[gpt2]
    keys.setdefault("max_position_embeddings", GPT2_DEFAULT_POSITIONS)
    keys["n_positions"] = keys["max_position_embeddings"]
    if raw.get("n_inner") is not None:
        keys["intermediate_size"] = raw["n_inner"]
    return keys


@dataclass(frozen=True)
class Dimensions:
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    dtype: str
    tie_word_embeddings: bool


@dataclass(frozen=True)
class LayerKinds:
    full: int
    sliding: int
    linear: int
    window: int | None  # the sliding window, only where some layer slides


@dataclass(frozen=True)
class AttentionVariants:
    attention_bias: bool
    attn_output_gate: bool
    global_num_kv_heads: int | None
    global_head_dim: int | None
    global_k_eq_v: bool
    rotary_dim: int


@dataclass(frozen=True)
class ContextLimit:
    """The longest max_model_len vLLM accepts without VLLM_ALLOW_LONG_MAX_MODEL_LEN, and where it came from."""

    derived: float  # an int unless a RoPE factor multiplied it (vLLM then prints e.g. 131072.0)
    key: str
    model_max_length: int | None


def _need(cfg: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return cfg[key]
    raise ArchitectureError(f"config.json has none of {', '.join(keys)}")


def _opt_int(value: Any) -> int | None:
    return int(value) if value is not None else None


def dimensions(config: HfConfig) -> Dimensions:
    cfg, top = config.text, config.top
    hidden = int(_need(cfg, "hidden_size", "d_model"))
    layers = int(_need(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    heads = int(_need(cfg, "num_attention_heads", "n_head"))
    return Dimensions(
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        intermediate_size=int(cfg.get("intermediate_size") or 4 * hidden),
        vocab_size=int(_need(cfg if "vocab_size" in cfg else top, "vocab_size")),
        max_position_embeddings=int(
            cfg.get("max_position_embeddings") or top.get("max_position_embeddings") or 8192
        ),
        dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or top.get("torch_dtype") or "bfloat16"),
        tie_word_embeddings=bool(top.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))),
    )


def is_encoder_only(config: HfConfig) -> bool:
    """Bidirectional encoders (the BERT family, the GTE family): vLLM gives them no KV cache."""
    name = config.architecture
    named = name in ENCODER_ARCHITECTURES or any(part in name for part in ENCODER_ONLY_NAMES)
    return named or bool(config.text.get("is_encoder_only"))


@dataclass(frozen=True)
class EncoderGeometry:
    """What an encoder's class builds beyond the decoder-shaped layers colo counts: its position scheme, a gated
    MLP, token-type rows, and the rotary caches of a rope encoder."""

    rope: Literal["none", "bert_with_rope", "nomic_bert", "modernbert"] = "none"
    gated_mlp: bool = False
    type_vocab_size: int = 0
    rotary_dim: int | None = None  # None: the decoder's reading
    rotary_rows: tuple[int, ...] = ()  # empty: the decoder's reading
    linear_bias: bool = False
    trained_length: TrainedLength | None = None


def _modernbert_thetas(cfg: Mapping[str, Any], layers: int) -> int:
    """The distinct rope parameters ModernBERT's layers pass get_rope (vllm 0.22.0 models/modernbert.py::
    ModernBertAttention.__init__): per layer type under transformers 5 (`layer_types`, `rope_parameters[type]`),
    else the global theta on every `global_attn_every_n_layers`-th layer and the local one (or the global, where
    none is set) on the sliding layers."""
    layer_types = cfg.get("layer_types")
    rope = cfg.get("rope_parameters")
    if layer_types and isinstance(rope, Mapping):
        return len({repr(rope.get(kind)) for kind in set(layer_types[:layers])})
    every = int(cfg.get("global_attn_every_n_layers") or 1)
    global_theta = cfg.get("global_rope_theta")
    local_theta = cfg.get("local_rope_theta")
    sliding = any(index % every for index in range(layers))
    return 2 if sliding and local_theta is not None and local_theta != global_theta else 1


def encoder_geometry(config: HfConfig, dims: Dimensions, encoder_only: bool) -> EncoderGeometry:
    """The GTE family (vllm 0.9.0 - 0.34.0 model_executor/models/bert_with_rope.py): BertWithRopeEmbedding has no
    position table, only token types (VocabParallelEmbedding, where type_vocab_size > 0); the rotary embedding is
    get_rope(head_size, max_position=max_position_embeddings, rotary_dim=rotary_emb_dim or head_dim, the config's
    rope parameters) in the model dtype, one cache for every layer (models/config.py::GteNewModelConfig,
    SnowflakeGteNewModelConfig); those handlers turn the config's hidden_act gelu into geglu, so the MLP is
    BertWithRopeGatedMLP (gate_up_proj). ModernBERT (models/modernbert.py): no position table, the gated Wi
    (hidden -> 2 x intermediate), head_dim rotary caches of max_position_embeddings rows per distinct theta."""
    name, cfg = config.architecture, config.text
    if not encoder_only:
        return EncoderGeometry()
    if name in BERT_WITH_ROPE_ARCHITECTURES:
        return EncoderGeometry(
            rope="bert_with_rope",
            gated_mlp=True,
            type_vocab_size=int(cfg.get("type_vocab_size") or 0),
            rotary_dim=int(cfg.get("rotary_emb_dim") or dims.head_dim),
        )
    if name == NOMIC_BERT:
        return nomic_bert_geometry(cfg, dims)
    if name in MODERNBERT_ARCHITECTURES:
        thetas = _modernbert_thetas(cfg, dims.num_layers)
        return EncoderGeometry(
            rope="modernbert",
            gated_mlp=True,
            rotary_dim=dims.head_dim,
            rotary_rows=(dims.max_position_embeddings,) * thetas,
        )
    return EncoderGeometry()


def nomic_bert_geometry(cfg: Mapping[str, Any], dims: Dimensions) -> EncoderGeometry:
    """NomicBertModel (vllm 0.10.1 - 0.34.0 models/bert_with_rope.py, a BertWithRope; models/config.py::
    NomicBertModelConfig): no position table, token types as in the GTE family; activation_function swiglu
    becomes silu and so BertWithRopeGatedMLP (gelu: the plain BertWithRopeMLP); `config.bias = qkv_proj_bias`
    (asserted equal to both MLP biases) on every linear; one rotary cache, rotary_emb_fraction x head_dim wide
    (0.10.1 - 0.12.0 `rotary_dim`, 0.13.0+ the partial_rotary_factor vLLM reads from rotary_emb_fraction), of
    max_trained_positions rows up to 0.21.0 (`max_position: max_trained_positions`, under the config's rope
    scaling) and max_model_len rows from 0.22.0 (colo.vllm.process.weights.encoder_rotary_caches). Its Mixture-
    of-Experts layers (NomicMoE, every moe_every_n_layers-th: nomic-embed-text-v2-moe) are not sized."""
    if int(cfg.get("moe_every_n_layers") or 0) > 0:
        raise ArchitectureError(
            "config.json sets moe_every_n_layers: colo does not size NomicBertModel's Mixture-of-Experts layers"
        )
    trained = int(cfg.get("max_trained_positions") or NOMIC_TRAINED_POSITIONS)
    return EncoderGeometry(
        rope="nomic_bert",
        gated_mlp=cfg.get("activation_function") == "swiglu",
        type_vocab_size=int(cfg.get("type_vocab_size") or 0),
        rotary_dim=int(dims.head_dim * float(cfg.get("rotary_emb_fraction") or 0.0)),
        rotary_rows=(scaled_cache_rows(cfg, trained),),
        linear_bias=bool(cfg.get("qkv_proj_bias")),
        trained_length=TrainedLength(trained, _rope_factor(cfg, trained)),
    )


def names_auto_config(config: HfConfig) -> bool:
    """config.json's auto_map names an AutoConfig class: the config itself is the repository's code (transformers'
    AutoConfig.from_pretrained has_remote_code)."""
    auto_map = config.top.get("auto_map")
    return isinstance(auto_map, Mapping) and "AutoConfig" in auto_map


def is_causal(config: HfConfig) -> bool:
    """The config's `is_causal` as vLLM's model classes read it (absent: causal). For Gemma3TextModel vLLM writes it
    from `use_bidirectional_attention` first (vllm 0.10.2 - 0.34.0 model_executor/models/config.py::
    Gemma3TextModelConfig: `hf_config.is_causal = not hf_config.use_bidirectional_attention`; EmbeddingGemma
    sets it true), so a bidirectional Gemma3TextModel has no KV cache (colo.vllm.process.attention_type)."""
    if config.architecture == GEMMA3_TEXT_MODEL:
        return not config.top.get("use_bidirectional_attention", False)
    return bool(config.top.get("is_causal", True))


def _kinds_from_layer_types(layer_types: list[str], layers: int) -> tuple[int, int, int]:
    full = sliding = linear = 0
    for kind in layer_types[:layers]:
        if kind in LINEAR_LAYER_TYPES:
            linear += 1
        elif kind in SLIDING_LAYER_TYPES:
            sliding += 1
        else:
            full += 1
    return full, sliding, linear


def layer_kinds(config: HfConfig, layers: int) -> LayerKinds:
    """Full, sliding-window and linear-attention layers: from `layer_types`, an interval or pattern
    (hybrids, Gemma 3), or one kind for every layer. Qwen configs carry a sliding_window they do not use."""
    cfg = config.text
    window: int | None = cfg.get("sliding_window")
    full = sliding = linear = 0
    if cfg.get("layer_types"):
        full, sliding, linear = _kinds_from_layer_types(cfg["layer_types"], layers)
    elif cfg.get("full_attention_interval"):
        full = layers // int(cfg["full_attention_interval"])
        linear = layers - full
    elif cfg.get("sliding_window_pattern") and window:
        full = layers // int(cfg["sliding_window_pattern"])
        sliding = layers - full
    elif window and cfg.get("use_sliding_window", True) and "Qwen" not in config.architecture:
        sliding = layers
    else:
        full = layers
    return LayerKinds(full, sliding, linear, int(window) if window and sliding else None)


def attention_variants(config: HfConfig, head_dim: int, kinds: LayerKinds) -> AttentionVariants:
    """Biases, output gates, Gemma 4's separate global-layer geometry and partial rotary embeddings."""
    cfg, architecture = config.text, config.architecture
    return AttentionVariants(
        attention_bias=bool(cfg.get("attention_bias", "Qwen2" in architecture)),
        attn_output_gate=bool(cfg.get("attn_output_gate", kinds.linear > 0 and "Qwen" in architecture)),
        global_num_kv_heads=_opt_int(cfg.get("num_global_key_value_heads")),
        global_head_dim=_opt_int(cfg.get("global_head_dim")),
        global_k_eq_v=bool(cfg.get("attention_k_eq_v", False)),
        rotary_dim=rotary_dim(cfg, head_dim),
    )


def rotary_dim(cfg: Mapping[str, Any], head_dim: int) -> int:
    rope = cfg.get("rope_parameters") or {}
    factor = (
        cfg.get("partial_rotary_factor")
        or (rope.get("partial_rotary_factor") if isinstance(rope, Mapping) else None)
        or 1.0
    )
    return int(head_dim * float(factor))


# Rotary embeddings whose cache outgrows max_position_embeddings: `max_position x factor` rows
# (`vllm/model_executor/layers/rotary_embedding/linear_scaling_rope.py::_compute_cos_sin_cache`, likewise
# dynamic NTK up to 0.21.0, rules.yaml dynamic_ntk_cache_rows; YaRN from `original_max_position_embeddings`,
# which get_rope passes as its max_position).
SCALED_CACHE_ROPE_TYPES = ("linear", "dynamic")
YARN_ROPE_TYPES = ("yarn", "deepseek_yarn")
# Decoders whose sliding layers build a second cache with their own base (`rope_local_base_freq`) and no
# scaling (`vllm/model_executor/models/gemma3.py::Gemma3Attention`).
LOCAL_ROPE_MODEL_TYPES = ("gemma3_text",)


def scaled_cache_rows(cfg: Mapping[str, Any], max_position: int, dynamic_scaled: bool = True) -> int:
    """Rows of the cos/sin cache get_rope builds for `max_position` under the config's rope_scaling.
    `dynamic_scaled` False: a release whose dynamic-NTK cache keeps max_position rows (0.22.0+)."""
    scaling = cfg.get("rope_scaling")
    rope: Mapping[str, Any] = scaling if isinstance(scaling, Mapping) else {}
    kind, factor = rope.get("rope_type") or rope.get("type"), float(rope.get("factor") or 1.0)
    if kind == "dynamic" and not dynamic_scaled:
        return max_position
    if kind in SCALED_CACHE_ROPE_TYPES:
        return int(max_position * factor)
    if kind in YARN_ROPE_TYPES:
        return int(int(rope.get("original_max_position_embeddings") or max_position) * factor)
    return max_position


def rotary_cache_rows(
    config: HfConfig, max_position: int, kinds: LayerKinds, dynamic_scaled: bool = True
) -> tuple[int, ...]:
    """Rows of each distinct cos/sin cache vLLM's get_rope builds for the decoder."""
    cfg = config.text
    rows = scaled_cache_rows(cfg, max_position, dynamic_scaled)
    local = kinds.sliding > 0 and cfg.get("model_type") in LOCAL_ROPE_MODEL_TYPES
    return (rows, max_position) if local else (rows,)


def unscaled_dynamic_rows(config: HfConfig, max_position: int, kinds: LayerKinds) -> tuple[int, ...]:
    """The decoder's cache rows in a release whose dynamic-NTK cache keeps max_position rows; empty where that
    changes nothing (no dynamic-NTK factor)."""
    rows = rotary_cache_rows(config, max_position, kinds, dynamic_scaled=False)
    return () if rows == rotary_cache_rows(config, max_position, kinds) else rows


# Multimodal Qwen decoders whose published configs carry `mrope_section` (Qwen2-VL and Qwen2.5-VL beside their
# rope type, Qwen3-VL and Qwen3.5 in rope_parameters: tests/hub_files Qwen2.5-VL-7B-Instruct and Qwen3.5-9B),
# which colo's catalog geometry leaves out.
MROPE_ARCHITECTURES = (
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
)


def uses_mrope(config: HfConfig) -> bool:
    """`get_rope` builds an MRotaryEmbedding when the rope parameters hold `mrope_section` (`vllm 0.22.0
    model_executor/layers/rotary_embedding/__init__.py::get_rope`)."""
    cfg = config.text
    for key in ("rope_parameters", "rope_scaling"):
        rope = cfg.get(key)
        if isinstance(rope, Mapping) and "mrope_section" in rope:
            return True
    return config.architecture in MROPE_ARCHITECTURES


def _sparse_layers(cfg: Mapping[str, Any], layers: int) -> int:
    """Layers whose MLP is sparse: DeepSeek keeps the first k dense, Qwen2-MoE can sparsify every n-th."""
    if cfg.get("first_k_dense_replace"):
        return layers - int(cfg["first_k_dense_replace"])
    step = int(cfg.get("decoder_sparse_step") or 0)
    return layers // step if step > 1 else layers


def _shared_expert_size(cfg: Mapping[str, Any], expert_size: int) -> int:
    shared = int(cfg.get("shared_expert_intermediate_size") or 0)
    if not shared and cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * expert_size
    return shared


def moe_geometry(config: HfConfig, dims: Dimensions) -> MoeGeometry | None:
    cfg = config.text
    experts = cfg.get("num_experts") or cfg.get("n_routed_experts") or cfg.get("num_local_experts")
    if not experts:
        return None
    expert_size = int(cfg.get("moe_intermediate_size") or dims.intermediate_size)
    return MoeGeometry(
        num_experts=int(experts),
        experts_per_token=int(cfg.get("num_experts_per_tok") or cfg.get("top_k_experts") or 2),
        moe_intermediate_size=expert_size,
        shared_expert_intermediate_size=_shared_expert_size(cfg, expert_size),
        moe_layers=_sparse_layers(cfg, dims.num_layers),
    )


def gdn_geometry(config: HfConfig, kinds: LayerKinds, dtype: str) -> GdnGeometry | None:
    """Gated DeltaNet state per linear-attention layer (Qwen3-Next, Qwen3.5/3.6)."""
    if not kinds.linear:
        return None
    cfg = config.text
    return GdnGeometry(
        num_key_heads=int(_need(cfg, "linear_num_key_heads")),
        num_value_heads=int(_need(cfg, "linear_num_value_heads")),
        key_head_dim=int(_need(cfg, "linear_key_head_dim")),
        value_head_dim=int(_need(cfg, "linear_value_head_dim")),
        conv_kernel=int(cfg.get("linear_conv_kernel_dim") or 4),
        ssm_dtype_bytes=DTYPE_BYTES.get(str(cfg.get("mamba_ssm_dtype") or dtype), 2),
        ssm_dtype_stated=bool(cfg.get("mamba_ssm_dtype")),
    )


def mla_geometry(config: HfConfig) -> MlaGeometry | None:
    """DeepSeek-style multi-head latent attention: the KV cache holds a compressed latent per token."""
    cfg = config.text
    if not cfg.get("kv_lora_rank"):
        return None
    return MlaGeometry(
        kv_lora_rank=int(cfg["kv_lora_rank"]),
        qk_rope_head_dim=int(cfg.get("qk_rope_head_dim") or 64),
        q_lora_rank=int(cfg["q_lora_rank"]) if cfg.get("q_lora_rank") else None,
        qk_nope_head_dim=int(cfg.get("qk_nope_head_dim") or 128),
        v_head_dim=int(cfg.get("v_head_dim") or 128),
    )


def mtp_layers(config: HfConfig) -> int:
    cfg = config.text
    return int(cfg.get("mtp_num_hidden_layers") or cfg.get("num_nextn_predict_layers") or 0)


def vision_parameters(config: HfConfig, text_hidden: int) -> int:
    """A ViT's parameters from its geometry: blocks of attention + MLP, patch embedding and a merger."""
    vision = config.top.get("vision_config")
    if not isinstance(vision, Mapping) or not vision.get("hidden_size"):
        return 0
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


def quantization_scheme(
    config: HfConfig, side_files: Mapping[str, Mapping[str, Any]] | None = None
) -> QuantizationScheme:
    """The checkpoint's quantization block, where vLLM looks for it: config.json's `quantization_config` (or the
    older `compression_config`), else its text_config's (multimodal), else hf_quant_config.json (ModelOpt) or
    quantize_config.json (GPTQ) beside it (`vllm 0.14.0 model_executor/model_loader/weight_utils.py::
    get_quant_config`). Which release finds which is colo.vllm.checkpoint.quant_methods' concern."""
    top, text = config.top, config.text
    for key in ("quantization_config", "compression_config"):
        if top.get(key):
            return read_quantization(top[key], "config.json")
    if text is not top and text.get("quantization_config"):
        return read_quantization(text["quantization_config"], "text_config")
    files = side_files or {}
    if files.get("hf_quant_config.json"):
        return read_quantization(files["hf_quant_config.json"], "hf_quant_config.json")
    if files.get("quantize_config.json"):
        block = {"quant_method": "gptq", **files["quantize_config.json"]}
        return read_quantization(block, "quantize_config.json")
    return UNQUANTIZED


# vllm 0.8.0 config.py::_get_and_verify_max_len .. 0.33.0 config/model.py: possible_keys, in this order
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")  # their factor is not applied to the derived length
DEFAULT_MAX_LEN = 2048  # "Assuming the model's maximum length is 2048"


def _rope_entries(cfg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`rope_scaling` (<= 0.19) or `rope_parameters` (0.20+), one mapping or one per layer type."""
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    if not isinstance(rope, Mapping) or "gemma3" in str(cfg.get("model_type", "")):
        return []
    nested = bool(rope) and all(isinstance(v, Mapping) for v in rope.values())
    return list(rope.values()) if nested else [rope]


def _rope_factor(cfg: Mapping[str, Any], derived: float) -> float:
    """Every RoPE type but su, longrope and llama3 multiplies the length by its factor; yarn starts from
    original_max_position_embeddings."""
    factor: float | None = None
    for params in _rope_entries(cfg):
        kind = params.get("rope_type") or params.get("type")
        if kind in UNSCALED_ROPE_TYPES or (kind in (None, "default") and "factor" not in params):
            continue
        factor = float(params.get("factor") or 1.0)
        if kind == "yarn" and params.get("original_max_position_embeddings"):
            derived = int(params["original_max_position_embeddings"])
    return derived * factor if factor is not None else derived


def context_limit(config: HfConfig) -> ContextLimit:
    """vLLM's derived max_model_len: the smallest length key of the text config, scaled by RoPE."""
    cfg = config.text
    present = [(key, cfg[key]) for key in MAX_LEN_KEYS if isinstance(cfg.get(key), int | float)]
    key, derived = min(present, key=lambda item: item[1]) if present else ("default", DEFAULT_MAX_LEN)
    mml = cfg.get("model_max_length")
    return ContextLimit(_rope_factor(cfg, derived), key, int(mml) if isinstance(mml, int | float) else None)


def encoder_config(side_files: Mapping[str, Mapping[str, Any]] | None) -> tuple[int | None, bool]:
    """sentence_bert_config.json's max_seq_length, and whether it also sets do_lower_case (which vLLM required
    until 0.32: `get_sentence_transformer_tokenizer_config`)."""
    found = (side_files or {}).get("sentence_bert_config.json")
    if not isinstance(found, Mapping) or not isinstance(found.get("max_seq_length"), int):
        return None, False
    return int(found["max_seq_length"]), "do_lower_case" in found


def image_max_pixels(side_files: Mapping[str, Mapping[str, Any]] | None) -> int | None:
    """The largest image the checkpoint's image processor accepts (preprocessor_config.json): `max_pixels`, or
    `size.longest_edge` where newer processors keep it (a pixel count, not an edge, for the Qwen-VL processors)."""
    found = (side_files or {}).get("preprocessor_config.json")
    if not isinstance(found, Mapping):
        return None
    size = found.get("size")
    value = found.get("max_pixels") or (size.get("longest_edge") if isinstance(size, Mapping) else None)
    return int(value) if isinstance(value, int) and value > 0 else None


def video_max_pixels(side_files: Mapping[str, Mapping[str, Any]] | None) -> int | None:
    """video_preprocessor_config.json's size.longest_edge: the pixels of all a video's frames (the Qwen3-VL
    video processor's unit; vLLM halves it per frame pair, `qwen3_vl.py::get_max_video_tokens`)."""
    found = (side_files or {}).get("video_preprocessor_config.json")
    size = found.get("size") if isinstance(found, Mapping) else None
    value = size.get("longest_edge") if isinstance(size, Mapping) else None
    return int(value) if isinstance(value, int) and value > 0 else None


def _int(mapping: Mapping[str, Any], *keys: str) -> int:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def vision_geometry(
    config: HfConfig, text_hidden: int, side_files: Mapping[str, Mapping[str, Any]] | None = None
) -> VisionGeometry | None:
    """The tower's patch geometry, where it has one (a `vision_config` with a patch size)."""
    vision = config.top.get("vision_config")
    if not isinstance(vision, Mapping) or not vision.get("hidden_size"):
        return None
    temporal = int(vision.get("temporal_patch_size") or 1)
    return VisionGeometry(
        hidden_size=_int(vision, "hidden_size", "embed_dim"),
        intermediate_size=_int(vision, "intermediate_size"),
        num_heads=_int(vision, "num_heads", "num_attention_heads"),
        depth=_int(vision, "depth", "num_hidden_layers"),
        image_size=_int(vision, "image_size"),
        # Gemma 3's mm_tokens_per_image; Gemma 4's vision_config.default_output_length (soft tokens per image)
        tokens_per_image=_int(config.top, "mm_tokens_per_image") or _int(vision, "default_output_length"),
        video_max_pixels=video_max_pixels(side_files),
        patch_size=int(vision.get("patch_size") or 14),
        temporal_patch_size=temporal,
        spatial_merge_size=int(vision.get("spatial_merge_size") or 1),
        in_channels=int(
            vision.get("in_channels") or vision.get("num_channels") or vision.get("in_chans") or 3
        ),
        out_hidden_size=int(vision.get("out_hidden_size") or text_hidden),
        deepstack_layers=len(vision.get("deepstack_visual_indexes") or ()),
        modalities=("image", "video") if temporal > 1 else ("image",),
        max_pixels=image_max_pixels(side_files),
    )


# vllm 0.22.0 - 0.34.0 transformers_utils/model_arch_config_convertor.py::ModelArchConfigConvertorBase.
# is_mm_prefix_lm: the config's own is_mm_prefix_lm, else these model types
MM_PREFIX_LM_MODEL_TYPES = ("bagel", "gemma3", "molmo2", "moondream3", "paligemma", "umm")
GEMMA4_ARCHITECTURE = "Gemma4ForConditionalGeneration"  # its own convertor; mm_profile counts its items


def mm_prefix_lm(config: HfConfig) -> bool:
    """vLLM's ModelConfig.is_mm_prefix_lm (bidirectional attention over multimodal positions): Gemma 4's
    convertor (Gemma4ModelArchConfigConvertor.is_mm_prefix_lm) asks text_config.use_bidirectional_attention
    == "vision"; any other model its config's is_mm_prefix_lm, else its model type in the fallback list."""
    top = config.top
    if GEMMA4_ARCHITECTURE in (top.get("architectures") or ()) or top.get("model_type") == "gemma4":
        return config.text.get("use_bidirectional_attention") == "vision"
    if "is_mm_prefix_lm" in top:
        return bool(top["is_mm_prefix_lm"])
    return str(top.get("model_type") or "") in MM_PREFIX_LM_MODEL_TYPES


def _dtype_key(cfg: Any) -> str | None:
    """A (sub-)config's dtype as transformers reads it: `torch_dtype`, or `dtype` in newer files."""
    if not isinstance(cfg, Mapping):
        return None
    value = cfg.get("torch_dtype") or cfg.get("dtype")
    return str(value) if value else None


def config_dtypes(config: HfConfig) -> ConfigDtypes:
    """Every key vLLM may read the checkpoint's dtype from (vllm 0.33.0 transformers_utils/
    model_arch_config_convertor.py::get_torch_dtype), and the model types its dtype rules name."""
    top = config.top
    raw_text = top.get("text_config")
    text: Mapping[str, Any] | None = raw_text if isinstance(raw_text, Mapping) else None
    model_type = str(top.get("model_type") or "")
    return ConfigDtypes(
        root=_dtype_key(top),
        text=_dtype_key(text),
        has_text_config=text is not None,
        vision=_dtype_key(top.get("vision_config")),
        encoder=_dtype_key(top.get("encoder_config")),
        model_type=model_type,
        text_model_type=str(text.get("model_type") or "") if text is not None else model_type,
    )


def from_hf_config(
    raw: Mapping[str, Any],
    model_id: str,
    source: str = "",
    side_files: Mapping[str, Mapping[str, Any]] | None = None,
) -> ModelArchitecture:
    """Build the geometry from a config.json mapping (multimodal configs: the text_config is used);
    `side_files` holds the other files vLLM reads where the checkpoint has them: hf_quant_config.json or
    quantize_config.json, sentence_bert_config.json, preprocessor_config.json."""
    config = HfConfig.of(raw)
    dims = dimensions(config)
    kinds = layer_kinds(config, dims.num_layers)
    attention = attention_variants(config, dims.head_dim, kinds)
    quantization = quantization_scheme(config, side_files)
    encoder_only = is_encoder_only(config)
    encoder = encoder_geometry(config, dims, encoder_only)
    limit = context_limit(config)
    encoder_length, lower_case_given = encoder_config(side_files)
    return ModelArchitecture(
        model_id=model_id,
        architecture=config.architecture,
        hidden_size=dims.hidden_size,
        num_layers=dims.num_layers,
        num_attention_heads=dims.num_attention_heads,
        num_kv_heads=dims.num_kv_heads,
        head_dim=dims.head_dim,
        intermediate_size=dims.intermediate_size,
        vocab_size=dims.vocab_size,
        max_position_embeddings=dims.max_position_embeddings,
        derived_max_model_len=limit.derived,
        max_model_len_key=limit.key,
        model_max_length=limit.model_max_length,
        encoder_max_seq_length=encoder_length,
        encoder_config_has_do_lower_case=lower_case_given,
        dtype=dims.dtype,
        tie_word_embeddings=dims.tie_word_embeddings,
        attention_bias=attention.attention_bias,
        attn_output_gate=attention.attn_output_gate,
        encoder_only=encoder_only,
        encoder_rope=encoder.rope,
        gated_encoder_mlp=encoder.gated_mlp,
        type_vocab_size=encoder.type_vocab_size,
        encoder_linear_bias=encoder.linear_bias,
        trained_length=encoder.trained_length,
        is_causal=is_causal(config),
        full_attention_layers=0 if encoder_only else kinds.full,
        sliding_attention_layers=kinds.sliding,
        sliding_window=kinds.window,
        linear_attention_layers=kinds.linear,
        global_num_kv_heads=attention.global_num_kv_heads,
        global_head_dim=attention.global_head_dim,
        global_k_eq_v=attention.global_k_eq_v,
        moe=moe_geometry(config, dims),
        gdn=gdn_geometry(config, kinds, dims.dtype),
        mla=mla_geometry(config),
        mtp_layers=mtp_layers(config),
        vision_parameters=vision_parameters(config, dims.hidden_size),
        vision=vision_geometry(config, dims.hidden_size, side_files),
        audio_tower=isinstance(config.top.get("audio_config"), Mapping),
        mm_prefix_lm=mm_prefix_lm(config),
        rotary_dim=attention.rotary_dim if encoder.rotary_dim is None else encoder.rotary_dim,
        rotary_cache_rows=encoder.rotary_rows
        or rotary_cache_rows(config, dims.max_position_embeddings, kinds),
        rotary_cache_rows_unscaled_dynamic=()
        if encoder.rotary_rows
        else unscaled_dynamic_rows(config, dims.max_position_embeddings, kinds),
        mrope=uses_mrope(config),
        quantization=quantization.method,
        quant_scheme=quantization,
        model_type=str(config.top.get("model_type") or config.text.get("model_type") or ""),
        has_auto_map=isinstance(config.top.get("auto_map"), Mapping),
        auto_config=names_auto_config(config),
        config_dtypes=config_dtypes(config),
        source=source,
    )
