"""Which engine vLLM picks for a server: colo mirrors the V1 engine only, so a V0 fallback is refused.

Up to 0.11.0 `EngineArgs._is_v1_supported_oracle` (`vllm 0.8.0 .. 0.11.0 engine/arg_utils.py`) sends
unsupported setups to the V0 engine, whose memory accounting is different ("{feature} is not supported by the
V1 Engine. Falling back to V0."); "experimental" ones too unless `VLLM_USE_V1=1`, which colo never sets. The
conditions a colo server can meet are typed fields of `VllmRules` (docs/vllm-memory-rules.md §12). From 0.11.1
the oracle is gone and every server runs V1.
"""

from __future__ import annotations

from colo.catalog import GpuSpec
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.rules import VllmRules

# vllm 0.8.0 engine/arg_utils.py::_is_v1_supported_oracle: V1_SUPPORTED_DTYPES
DTYPE_NAMES = {"bfloat16": "torch.bfloat16", "float16": "torch.float16", "float32": "torch.float32"}
EXPERIMENTAL_PP = "PP"  # vllm 0.8.0-0.8.2 _is_v1_supported_oracle: _warn_or_fallback("PP")


def _fp8_kv_on_v1(rules: VllmRules, gpu: GpuSpec, mla: bool) -> bool:
    """Whether an fp8 KV cache keeps the server on V1: FlashAttention 3 on compute capability 9.x (0.8.2+),
    any Blackwell 10.0 backend (0.10.0+), and FlashMLA/CUTLASS MLA for MLA models (0.10.2,
    `platforms/cuda.py::is_kv_cache_dtype_supported`)."""
    major, minor = gpu.compute_capability
    hopper = major == 9
    blackwell = (major, minor) == (10, 0)
    mode = rules.v1_fp8_kv
    return (
        mode == "any"
        or (mode == "fa3_sm90" and hopper)
        or (mode == "fa3_sm90_or_sm100" and (hopper or blackwell))
        or (mode == "backend" and (mla or hopper or blackwell))
    )


def _speculative_on_v1(rules: VllmRules, method: str | None) -> bool:
    methods = rules.v1_spec_methods
    return method is None or "*" in methods or method in methods


def _pipeline_features(rules: VllmRules, pipeline_parallel_size: int) -> list[str]:
    """PP on V1 from 0.9.0; before, always V0 (0.8.0-0.8.2) or V0 unless Ray runs it (0.8.3-0.8.5.post1; the
    single-node default is the mp executor)."""
    if pipeline_parallel_size <= 1 or rules.pp_engine == "v1":
        return []
    if rules.pp_engine == "v0":
        return [EXPERIMENTAL_PP]
    return ["Pipeline Parallelism without Ray distributed executor"]


def v0_fallback_features(
    rules: VllmRules,
    arch: ModelArchitecture,
    gpu: GpuSpec,
    *,
    pooling: bool,
    kv_cache_dtype: str,
    speculative_method: str | None,
    pipeline_parallel_size: int = 1,
) -> list[str]:
    """The features vLLM names when it falls back to V0 for this server, in its own words; empty: V1."""
    features: list[str] = _pipeline_features(rules, pipeline_parallel_size)
    major, minor = gpu.compute_capability
    if rules.v1_min_compute_capability is not None and major * 10 + minor < rules.v1_min_compute_capability:
        features.append("Compute Capability < 8.0")
    if kv_cache_dtype != "auto" and not _fp8_kv_on_v1(rules, gpu, arch.mla is not None):
        features.append("--kv-cache-dtype")
    if rules.v1_dtypes is not None and arch.dtype not in rules.v1_dtypes:
        features.append(f"--dtype {DTYPE_NAMES.get(arch.dtype, arch.dtype)}")
    if arch.quantization in rules.v1_refused_quantization:
        features.append(f"--quantization {arch.quantization}")
    if pooling and not rules.v1_pooling:
        features.append("--task embed")
    if arch.architecture in rules.v0_only_architectures:
        features.append(f"['{arch.architecture}']")
    elif arch.is_hybrid_linear and rules.v1_mamba != "default":
        features.append(f"['{arch.architecture}'] (Mamba-style layers)")
    if not _speculative_on_v1(rules, speculative_method):
        features.append("Speculative Decoding")
    return features


def _fallback_sentence(feature: str) -> str:
    """`_raise_or_fallback`'s sentence, or `_warn_or_fallback`'s for what 0.8.0-0.8.2 call experimental."""
    if feature == EXPERIMENTAL_PP:
        return f"{feature} is experimental on VLLM_USE_V1=1. Falling back to V0 Engine."
    return f"{feature} is not supported by the V1 Engine. Falling back to V0."


def v0_fallback_message(version: str, features: list[str]) -> str:
    reasons = "; ".join(_fallback_sentence(feature) for feature in features)
    return (
        f"vLLM {version} would run this server on its V0 engine ({reasons}); colo mirrors the V1 engine's memory "
        f"accounting only, so it cannot size it. Fix: pin a release whose V1 engine supports it, or drop the "
        f"setting named above"
    )
