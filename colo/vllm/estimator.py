"""One vLLM process (one rank) sized from a request: the memory model's public entry point.

`colo estimate` and the accuracy bench validate their arguments with the stack schema's types
(colo.config.estimate) and hand the resulting EstimateRequest here, so the bench scores exactly what a user would
be told. Whatever colo cannot size is refused with the argument to blame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colo.catalog import GIB, GpuLookupError, GpuSpec, resolve_gpu
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.hub import HubError, HubModel
from colo.vllm.checkpoint.named import named_model
from colo.vllm.checkpoint.quant_methods import QuantizationRefused, resolve_architecture
from colo.vllm.process.budget import ProcessBudget, ProcessSpec, size_process
from colo.vllm.process.engine_limits import resolve_limits
from colo.vllm.process.refusals import ServerSettings, vllm_refusals
from colo.vllm.rules import VllmRules, kv_cache_memory_bytes_missing, rules_for
from colo.vllm.views import budget_view, gpu_view


@dataclass(frozen=True)
class EstimateRequest:
    """What to size, in vLLM's own terms: each field is the `vllm serve` flag of the same name (dashes for
    underscores), None where the flag is left to vLLM's default; `colo estimate`'s flags are these."""

    model: str  # a path to a config.json or model directory, else a Hugging Face id (catalog first, then the Hub)
    vllm_version: str
    revision: str | None = None  # the Hub revision a Hub id is read at; None: main
    gpu: str | None = None  # any name nvidia-smi prints, or its short form
    gpu_memory_mib: int | None = None  # the CUDA total, for a GPU the catalog lacks
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    enforce_eager: bool = False
    pooling: bool = False  # --runner pooling
    tensor_parallel_size: int = 1
    kv_cache_memory_bytes: int | None = None
    free_memory_gib: float | None = None  # what other processes leave free on the GPU before this one starts
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    allow_long_max_model_len: bool = False
    language_model_only: bool = False
    limit_mm_per_prompt: dict[str, int] | None = None
    skip_mm_profiling: bool = False
    trust_remote_code: bool = False  # --trust-remote-code
    flashinfer_installed: bool = True  # the official images carry it; a pip install may not
    peer_to_peer: bool = True  # False: tensor-parallel ranks cannot reach each other directly


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
    hub: HubModel | None = None  # the Hub read the architecture came from, if it did
    source: str = "catalog"  # where the architecture was read: catalog, file or hub


def _architecture(args: EstimateRequest) -> tuple[ModelArchitecture, HubModel | None, str]:
    path = Path(args.model)
    if path.exists():
        try:
            return architecture_from_path(path, path.name), None, "file"
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EstimateRefused("model", f"cannot read an architecture from {args.model}: {exc}") from None
    try:
        arch, hub = named_model(args.model, args.revision)
    except HubError as exc:
        raise EstimateRefused(exc.about, exc.args[0]) from None
    return arch, hub, "catalog" if hub is None else "hub"


def _gpu(args: EstimateRequest) -> GpuSpec:
    try:
        return resolve_gpu(args.gpu, args.gpu_memory_mib)
    except GpuLookupError as exc:
        raise EstimateRefused("gpu", str(exc.args[0])) from None


def _rules(args: EstimateRequest) -> VllmRules:
    try:
        rules = rules_for(args.vllm_version)
    except ValueError as exc:
        raise EstimateRefused("vllm_version", str(exc)) from None
    missing = kv_cache_memory_bytes_missing(rules, args.vllm_version)
    if args.kv_cache_memory_bytes is not None and missing:
        raise EstimateRefused("kv_cache_memory_bytes", missing)
    return rules


def _refuse_what_vllm_refuses(args: EstimateRequest, spec: ProcessSpec) -> None:
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
        trust_remote_code=args.trust_remote_code,
    )
    refusals = vllm_refusals(spec.rules, spec.arch, spec.gpu, settings)
    if refusals:
        key = refusals[0].key.replace(".", "_")
        raise EstimateRefused(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key), refusals[0].message)


def estimate(args: EstimateRequest, *, kv_pool_bytes: int | None = None) -> Estimate:
    """Size the process as vLLM would. `kv_pool_bytes` fixes the KV pool whatever the release, for
    comparisons "given the pool" (the user's way is --kv-cache-memory-bytes, where the release has it)."""
    gpu_spec = _gpu(args)
    rules = _rules(args)
    read, hub, source = _architecture(args)
    try:
        arch = resolve_architecture(
            read,
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
    spec = ProcessSpec(
        arch=arch,
        gpu=gpu_spec,
        rules=rules,
        vllm_version=args.vllm_version,
        limits=limits,
        pooling=args.pooling,
        kv_cache_dtype=args.kv_cache_dtype,
        enforce_eager=args.enforce_eager,
        num_speculative_tokens=args.num_speculative_tokens,
        speculative_method=args.speculative_method,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_memory_bytes=kv_pool_bytes if kv_pool_bytes is not None else args.kv_cache_memory_bytes,
        tensor_parallel_size=args.tensor_parallel_size,
        language_model_only=args.language_model_only,
        mm_limits=tuple(sorted((args.limit_mm_per_prompt or {}).items())),
        skip_mm_profiling=args.skip_mm_profiling,
        flashinfer_installed=args.flashinfer_installed,
        peer_to_peer=args.peer_to_peer,
    )
    _refuse_what_vllm_refuses(args, spec)
    free = None if args.free_memory_gib is None else round(args.free_memory_gib * GIB)
    return Estimate(arch, gpu_spec, rules, size_process(spec, free_before_bytes=free), hub, source)


def estimate_view(result: Estimate) -> dict[str, Any]:
    return {
        "model": result.arch.model_id,
        "model_source": (
            {
                "kind": "hub",
                "repo_id": hub.repo_id,
                "revision": hub.revision,
                "commit": hub.commit,
                "notes": list(hub.notes),
            }
            if (hub := result.hub) is not None
            else {"kind": result.source}
        ),
        "gpu": result.gpu.name,
        "gpu_detail": gpu_view(result.gpu),
        "rules": result.rules.label,
        **budget_view(result.budget),
    }
