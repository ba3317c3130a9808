"""Whether vLLM builds a pooling model's attention bidirectional (ENCODER_ONLY), and what that does to its KV cache.

An encoder (BERT family, `arch.encoder_only`) has only encoder-only attention layers. A decoder class chooses per
model: vllm 0.9.2 - 0.34.0 model_executor/models/llama.py::LlamaDecoderLayer.__init__ (and qwen2.py, qwen3.py,
from 0.10.2 gemma3.py) build `AttentionType.ENCODER_ONLY` attention where the config's `is_causal` is false, and
a few pooling classes set that flag themselves (gritlm.py::GritLM.__init__; model_executor/models/config.py::
LlamaBidirectionalConfig, VoyageQwen3BidirectionalEmbedModelConfig). An ENCODER_ONLY layer gives no KV cache
spec, so a model made only of them has no KV pool (v1/engine/core.py::EngineCore._initialize_kv_caches:
`has_kv_cache` is false, determine_available_memory is never called) - or, in some releases, cannot start at all.
rules.bidirectional_attention lists, per release, the names whose class does this and what follows; a class it
does not list keeps its KV cache whatever the config says (or is one colo does not model: MLA and hybrid
decoders, whose non-causal forms change more than the pool).

vLLM's `ModelConfig.attn_type` (0.12.0 - 0.34.0 config/model.py), which also calls a pooling model whose class
pools CLS by default "encoder_only", decides only chunked prefill and prefix caching
(`is_chunked_prefill_supported`, `is_prefix_caching_supported`); the KV cache follows the layers built here.
"""

from __future__ import annotations

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.rules import VllmRules, release_windows

# vLLM's words for each way a release fails to start such a model
FAILURES = {
    "flash_attn_impl": (
        "v1/attention/backends/flash_attn.py::FlashAttentionImpl.__init__ raises NotImplementedError: Encoder "
        "self-attention and encoder/decoder cross-attention are not implemented for FlashAttentionImpl"
    ),
    "kv_cache_spec": (
        "attention/layer.py::Attention.get_kv_cache_spec raises AssertionError "
        "(`assert self.attn_type == AttentionType.DECODER`) for its plain Attention layers"
    ),
}


def bidirectional(arch: ModelArchitecture, rules: VllmRules) -> bool:
    """Whether vLLM builds every attention layer of this pooling model ENCODER_ONLY: an encoder; a decoder class
    the release lists whose config says `is_causal: false`; a class that sets that flag itself."""
    listed = rules.bidirectional_attention
    name = arch.architecture
    follows_flag = name in listed.no_kv or name in listed.fails
    return arch.encoder_only or name in listed.always or (follows_flag and not arch.is_causal)


def without_kv_cache(arch: ModelArchitecture, rules: VllmRules | None, *, pooling: bool) -> bool:
    """Whether vLLM allocates no KV cache for the model: an encoder always; a bidirectional decoder served as a
    pooling model where the release gives its layers no spec (rules None: encoders only)."""
    if arch.encoder_only:
        return True
    if rules is None or not pooling:
        return False
    return bidirectional(arch, rules) and arch.architecture in rules.bidirectional_attention.no_kv


def _spans(name: str) -> str:
    """The mirrored releases that serve `name` bidirectionally without a KV cache, as runs of ranges."""
    windows = release_windows(lambda entry: name in entry.bidirectional_attention.no_kv)
    return ", ".join(f"{first} to {last}" for first, last in windows)


def bidirectional_failure(arch: ModelArchitecture, rules: VllmRules, version: str) -> str | None:
    """Why vLLM `version` cannot start this bidirectional pooling model (None: it can)."""
    listed = rules.bidirectional_attention
    if arch.encoder_only or arch.architecture not in listed.fails or not bidirectional(arch, rules):
        return None
    why = (
        "vLLM makes it bidirectional as a pooling model"
        if arch.architecture in listed.always
        else "its config.json sets is_causal: false"
    )
    return (
        f"vLLM {version} cannot start {arch.architecture} with bidirectional attention ({why}): its decoder "
        f"layers are built ENCODER_ONLY and {FAILURES[listed.failure]}. Fix: pin a vLLM release that serves "
        f"it without a KV cache ({_spans(arch.architecture)})"
    )
