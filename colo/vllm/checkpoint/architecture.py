"""A model's geometry: everything the budget needs, nothing else (colo.vllm.checkpoint.hf_config reads it from a
Hugging Face config.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from colo.vllm.checkpoint.quantization import UNQUANTIZED, QuantizationScheme

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
    ssm_dtype_stated: bool = True  # the config sets mamba_ssm_dtype; else the state takes the model dtype


@dataclass(frozen=True)
class MlaGeometry:
    kv_lora_rank: int
    qk_rope_head_dim: int
    q_lora_rank: int | None = None
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128


@dataclass(frozen=True)
class VisionGeometry:
    """What vLLM's encoder profiling pass keeps alive for one maximum-size image (Qwen-VL style towers)."""

    patch_size: int
    temporal_patch_size: int
    spatial_merge_size: int
    in_channels: int
    out_hidden_size: int
    deepstack_layers: int = 0  # deepstack_visual_indexes: extra encoder outputs handed to the decoder
    modalities: tuple[str, ...] = ("image",)
    max_pixels: int | None = None  # preprocessor_config.json's largest image; None: the processor's default
    # The tower itself, for the profile's transient peak (colo.vllm.process.mm_profile); 0: not stated
    hidden_size: int = 0
    intermediate_size: int = 0
    num_heads: int = 0
    depth: int = 0  # the tower's blocks (0: not stated)
    image_size: int = 0  # a fixed-resolution tower's input edge (SigLIP: 896)
    tokens_per_image: int = (
        0  # embeddings a fixed-resolution tower hands the decoder per image (Gemma 3: 256)
    )
    video_max_pixels: int | None = (
        None  # video_preprocessor_config.json's size.longest_edge (frames x pixels)
    )


@dataclass(frozen=True)
class ConfigDtypes:
    """The dtype keys of a config.json where vLLM looks for the checkpoint's dtype (None: the key is absent), and
    the model types its dtype rules name. colo.vllm.process.model_dtype reads them in the release's order."""

    root: str | None = None  # the top level's torch_dtype (or dtype)
    text: str | None = None  # text_config's, where the config has one
    has_text_config: bool = False
    vision: str | None = None  # vision_config's
    encoder: str | None = None  # encoder_config's
    weights: str | None = None  # the one dtype of the safetensors tensors, where their headers were read
    model_type: str = ""  # the top level's model_type
    text_model_type: str = ""  # text_config's model_type (the top level's where there is no text_config)


@dataclass(frozen=True)
class TrainedLength:
    """The length a NomicBertModel was trained to (config.json's max_trained_positions, else 2048), which vLLM
    0.10.1 - 0.21.0 cap max_model_len at and size its rotary cache by (rules.nomic_context), and the derived
    length those releases then check a user's max_model_len against: the trained length in place of
    max_position_embeddings, times the config's RoPE factor (models/config.py::NomicBertModelConfig)."""

    positions: int
    limit: float


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
    dtype: str = "bfloat16"  # the dtype vLLM runs the model in (colo.vllm.process.model_dtype sets it)
    # vLLM's derived maximum length (`_get_and_verify_max_len`): the smallest length key of the config, times
    # a RoPE scaling factor; the key it came from; the config's own model_max_length, which may allow more.
    derived_max_model_len: float | None = None  # None: max_position_embeddings
    max_model_len_key: str = "max_position_embeddings"
    model_max_length: int | None = None
    # sentence_bert_config.json (a sentence-transformers model): its max_seq_length replaces the derived length
    # where the release takes the file (`get_sentence_transformer_tokenizer_config`); do_lower_case was once required.
    encoder_max_seq_length: int | None = None
    encoder_config_has_do_lower_case: bool = False
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    attn_output_gate: bool = False  # q_proj also emits a per-head output gate (Qwen3-Next, Qwen3.5/3.6)
    encoder_only: bool = False
    # An encoder whose attention rotates q and k instead of reading a position-embedding table: vLLM's
    # bert_with_rope.py classes (the GTE family; NomicBertModel, "nomic_bert", whose cache and length follow
    # its trained length) or modernbert.py's; get_rope builds its cos/sin caches
    # (colo.vllm.process.weights.rotary_caches). "none": absolute positions (BERT, RoBERTa), or not an encoder.
    encoder_rope: Literal["none", "bert_with_rope", "nomic_bert", "modernbert"] = "none"
    gated_encoder_mlp: bool = False  # the encoder's MLP is gated (BertWithRopeGatedMLP, ModernBertMLP's Wi)
    type_vocab_size: int = 0  # a bert_with_rope encoder's token-type embedding rows (none where 0)
    # NomicBertModel: every linear has a bias where its config's qkv_proj_bias says so (vLLM's config.bias)
    encoder_linear_bias: bool = False
    trained_length: TrainedLength | None = None  # NomicBertModel's trained length (None: any other model)
    # The pooling a sentence-transformers checkpoint declares (colo.vllm.checkpoint.pooling); None: it declares
    # none, or colo did not read it, and vLLM takes the model class's default (colo.vllm.process.engine_limits).
    declared_pooling: tuple[str, ...] | None = None
    # The same as releases that also read a string pooling_mode and the newer Pooling module type read it
    # (colo.vllm.checkpoint.pooling, rules.st_pooling_config mode_string), where that differs; None: the same.
    declared_pooling_mode_string: tuple[str, ...] | None = None
    is_causal: bool = True  # config.json's is_causal; False: vLLM pools it with bidirectional attention
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
    vision: VisionGeometry | None = None
    # config.json has an audio_config, so vLLM serves audio items too (Gemma 4 E2B/E4B: vllm 0.22.0 - 0.34.0
    # models/gemma4_mm.py::Gemma4ProcessingInfo.get_supported_mm_limits, where transformers' Gemma4Config keeps a
    # missing or null audio_config as None)
    audio_tower: bool = False
    # vLLM attends bidirectionally over the multimodal positions (ModelConfig.is_mm_prefix_lm: Gemma 4 with
    # text_config.use_bidirectional_attention "vision"); colo.vllm.process.engine_limits reads it
    mm_prefix_lm: bool = False
    rotary_dim: int | None = None  # partial rotary embeddings cache fewer dimensions
    # rows of each cos/sin cache get_rope builds (empty: one of max_position_embeddings rows)
    rotary_cache_rows: tuple[int, ...] = ()
    # rotary_cache_rows in a release whose dynamic-NTK cache keeps max_position rows, not max_position x factor
    # (rules.yaml dynamic_ntk_cache_rows); empty: the same as rotary_cache_rows
    rotary_cache_rows_unscaled_dynamic: tuple[int, ...] = ()
    # the decoder's rotary embedding is M-RoPE (MRotaryEmbedding), whose cache vLLM sizes by a release's
    # positions factor (colo.vllm.process.weights.rotary_caches)
    mrope: bool = False
    # vLLM's name for the quantization method ("none": full precision). From config.json it is the method the
    # checkpoint declares; colo.vllm.checkpoint.quant_methods.resolve_architecture sets what a release and GPU run.
    quantization: str = "none"
    quant_scheme: QuantizationScheme = UNQUANTIZED  # the checkpoint's block: formats, targets, ignore list
    quantization_flag: str | None = None  # `--quantization` as given (None: vLLM reads the checkpoint)
    model_type: str = ""  # config.json model_type: some overrides depend on it (gpt_oss)
    has_auto_map: bool = False  # config.json names the repository's own classes (trust_remote_code territory)
    auto_config: bool = False  # ... and among them its config class (auto_map's AutoConfig entry)
    checkpoint_bytes: int | None = None  # exact bytes of the weights when read from safetensors headers
    checkpoint_bytes_by_part: Mapping[str, int] = field(default_factory=dict)
    config_dtypes: ConfigDtypes | None = None  # None: a geometry built by hand, whose `dtype` is the config's
    checkpoint_dtype: str | None = None  # the files' dtype where vLLM runs another one (None: `dtype`)
    source: str = ""

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)

    @property
    def rotary_cache_bytes(self) -> int:
        """The cos/sin caches one process holds: rows x rotary dimensions in the model dtype, per distinct cache
        (`RotaryEmbedding.__init__` registers `cos_sin_cache.to(dtype)` as a buffer, counted in weights)."""
        rows = sum(self.rotary_cache_rows) or self.max_position_embeddings
        return rows * (self.rotary_dim or self.head_dim) * self.dtype_bytes

    @property
    def checkpoint_dtype_bytes(self) -> int:
        """Bytes of one unquantized element as the checkpoint stores it."""
        return DTYPE_BYTES.get(self.checkpoint_dtype or self.dtype, 2)

    def served_in(self, dtype: str) -> ModelArchitecture:
        """The model as vLLM runs it in `dtype`: every tensor it allocates takes that dtype, the files keep theirs."""
        if dtype == self.dtype:
            return self
        gdn = self.gdn
        if gdn is not None and not gdn.ssm_dtype_stated:  # mamba_ssm_cache_dtype auto: the model dtype
            gdn = replace(gdn, ssm_dtype_bytes=DTYPE_BYTES.get(dtype, 2))
        return replace(self, dtype=dtype, checkpoint_dtype=self.checkpoint_dtype or self.dtype, gdn=gdn)

    @property
    def max_model_len_limit(self) -> float:
        return (
            self.max_position_embeddings if self.derived_max_model_len is None else self.derived_max_model_len
        )

    @property
    def is_hybrid_linear(self) -> bool:
        return self.linear_attention_layers > 0

    def with_quantization(self, quantization: str) -> ModelArchitecture:
        """The model served with `--quantization quantization`: vLLM checks the name against the checkpoint's
        block, or quantizes a full-precision checkpoint at load (colo.vllm.checkpoint.quant_methods)."""
        return replace(self, quantization=quantization, quantization_flag=quantization)


class ArchitectureError(ValueError):
    """The config.json lacks a key the budget needs; the message names the key."""
