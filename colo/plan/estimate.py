"""One vLLM process sized from `colo estimate`'s arguments: the path the CLI and the accuracy bench share.

Both hand an EstimateArguments (validated with the stack schema's types) to `estimate`, so the bench scores
exactly what a user would be told. Whatever colo cannot size is refused with the argument to blame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colo.catalog import GIB, GpuLookupError, GpuSpec, resolve_gpu
from colo.config.estimate import EstimateArguments
from colo.plan.budget import ProcessBudget, ProcessSpec, size_process
from colo.plan.engine_limits import resolve_limits
from colo.plan.refusals import ServerSettings, vllm_refusals
from colo.plan.report import budget_view, gpu_view
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.quant_methods import QuantizationRefused, resolve_architecture
from colo.vllm.rules import VllmRules, kv_cache_memory_bytes_missing, rules_for


class EstimateRefused(Exception):
    """An argument colo cannot size with; `field` is the argument's name (the flag without dashes)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Estimate:
    arch: ModelArchitecture
    gpu: GpuSpec
    rules: VllmRules
    budget: ProcessBudget


def _architecture(model: str) -> ModelArchitecture:
    path = Path(model)
    if path.exists():
        try:
            return architecture_from_path(path, path.name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EstimateRefused("model", f"cannot read an architecture from {model}: {exc}") from None
    try:
        return catalog_architecture(model)
    except KeyError:
        raise EstimateRefused(
            "model", f"'{model}' is neither a catalog model nor a path to a config.json or model directory"
        ) from None


def _gpu(args: EstimateArguments) -> GpuSpec:
    try:
        return resolve_gpu(args.gpu, args.gpu_memory_mib)
    except GpuLookupError as exc:
        raise EstimateRefused("gpu", str(exc.args[0])) from None


def _rules(args: EstimateArguments) -> VllmRules:
    try:
        rules = rules_for(args.vllm_version)
    except ValueError as exc:
        raise EstimateRefused("vllm_version", str(exc)) from None
    missing = kv_cache_memory_bytes_missing(rules, args.vllm_version)
    if args.kv_cache_memory_bytes is not None and missing:
        raise EstimateRefused("kv_cache_memory_bytes", missing)
    return rules


def _refuse_what_vllm_refuses(args: EstimateArguments, spec: ProcessSpec) -> None:
    """A V0 fallback, a context past the model's, a TP size that does not split the heads, an unknown flag."""
    settings = ServerSettings(
        version=args.vllm_version,
        pooling=spec.pooling,
        kv_cache_dtype=spec.kv_cache_dtype,
        speculative_method=spec.speculative_method,
        max_model_len=args.max_model_len,
        tensor_parallel_size=args.tensor_parallel_size,
        allow_long_max_model_len=args.allow_long_max_model_len,
        language_model_only=args.language_model_only,
        skip_mm_profiling=args.skip_mm_profiling,
    )
    refusals = vllm_refusals(spec.rules, spec.arch, spec.gpu, settings)
    if refusals:
        key = refusals[0].key.replace(".", "_")
        raise EstimateRefused(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key), refusals[0].message)


def estimate(args: EstimateArguments, *, kv_pool_bytes: int | None = None) -> Estimate:
    """Size the process as vLLM would. `kv_pool_bytes` fixes the KV pool whatever the release, for
    comparisons "given the pool" (the user's way is --kv-cache-memory-bytes, where the release has it)."""
    gpu_spec = _gpu(args)
    rules = _rules(args)
    try:
        arch = resolve_architecture(
            _architecture(args.model),
            args.quantization,
            vllm_version=args.vllm_version,
            capability=gpu_spec.compute_capability,
        )
    except QuantizationRefused as exc:
        raise EstimateRefused("quantization", str(exc)) from None
    limits = resolve_limits(
        arch,
        gpu_spec,
        rules,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
    )
    speculative = args.speculative
    spec = ProcessSpec(
        arch=arch,
        gpu=gpu_spec,
        rules=rules,
        vllm_version=args.vllm_version,
        limits=limits,
        pooling=args.runner == "pooling",
        kv_cache_dtype=args.kv_cache_dtype,
        enforce_eager=args.enforce_eager,
        num_speculative_tokens=speculative.num_speculative_tokens if speculative else 0,
        speculative_method=speculative.method if speculative else None,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_memory_bytes=kv_pool_bytes if kv_pool_bytes is not None else args.kv_cache_memory_bytes,
        tensor_parallel_size=args.tensor_parallel_size,
        language_model_only=args.language_model_only,
        mm_limits=tuple(sorted((args.limit_mm_per_prompt or {}).items())),
        skip_mm_profiling=args.skip_mm_profiling,
        flashinfer_installed=not args.without_flashinfer,
        peer_to_peer=not args.no_peer_to_peer,
    )
    _refuse_what_vllm_refuses(args, spec)
    free = None if args.free_memory_gib is None else round(args.free_memory_gib * GIB)
    return Estimate(arch, gpu_spec, rules, size_process(spec, free_before_bytes=free))


def estimate_view(result: Estimate) -> dict[str, Any]:
    return {
        "model": result.arch.model_id,
        "gpu": result.gpu.name,
        "gpu_detail": gpu_view(result.gpu),
        "rules": result.rules.label,
        **budget_view(result.budget),
    }
