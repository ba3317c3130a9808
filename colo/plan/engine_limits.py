"""Engine limits vLLM fills in when the user leaves them unset (`EngineArgs._set_default_args`)."""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GIB, GpuSpec
from colo.catalog.architecture import ModelArchitecture
from colo.catalog.vllm_rules import VllmRules

LARGE_GPU_BYTES = 70 * GIB  # at or above this (and not an A100) the OpenAI server takes the larger defaults
HUGE_GPU_BYTES = 160 * GIB  # 0.28+: a third tier


@dataclass(frozen=True)
class EngineLimits:
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool


def resolve_limits(
    arch: ModelArchitecture,
    gpu: GpuSpec,
    rules: VllmRules,
    *,
    max_model_len: int | None,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
) -> EngineLimits:
    model_len = max_model_len or arch.max_position_embeddings
    large = gpu.cuda_total_bytes >= LARGE_GPU_BYTES and not gpu.name.startswith("A100")
    huge = rules.batch_tier_160gib and gpu.cuda_total_bytes >= HUGE_GPU_BYTES
    seqs = max_num_seqs or (1024 if large else 256)
    # Encoder-only (bidirectional) poolers cannot chunk a prefill, so one batch must hold a whole input.
    chunked = not arch.encoder_only
    if max_num_batched_tokens is not None:
        tokens = max_num_batched_tokens
    elif not chunked:
        tokens = model_len
    else:
        tokens = 16384 if huge else 8192 if large else 2048
    return EngineLimits(model_len, seqs, tokens, chunked)
