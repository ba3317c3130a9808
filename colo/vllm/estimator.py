"""One vLLM process (one rank) sized from a request: the memory model's public entry point.

`colo estimate` and the accuracy bench validate their arguments with the stack schema's types
(colo.config.estimate) and hand the resulting EstimateRequest here, so the bench scores exactly what a user would
be told. Whatever colo cannot size is refused with the argument to blame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from colo.catalog import GIB, GpuLookupError, GpuSpec, resolve_gpu
from colo.vllm.assumed_rules import assumed_rules_warning, assumption_refusal
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.hub import HubError, HubModel
from colo.vllm.checkpoint.named import named_model
from colo.vllm.checkpoint.quant_methods import QuantizationRefused, resolve_architecture
from colo.vllm.process.budget import ProcessBudget, ProcessSpec, size_process
from colo.vllm.process.engine_limits import resolve_limits
from colo.vllm.process.model_dtype import served_architecture
from colo.vllm.process.pipeline import stages
from colo.vllm.process.refusals import ServerSettings, batch_limits_refusal, vllm_refusals
from colo.vllm.process.weight_modules import stage_holds
from colo.vllm.rules import VllmRules, kv_cache_memory_bytes_missing, rules_for
from colo.vllm.views import budget_view, gpu_view, in_gib


@dataclass(frozen=True)
class EstimateRequest:
    """What to size, in vLLM's own terms: each field is the `vllm serve` flag of the same name (dashes for
    underscores), None where the flag is left to vLLM's default; `colo estimate`'s flags are these."""

    model: str  # a path to a config.json or model directory, else a Hugging Face id (catalog first, then the Hub)
    vllm_version: str
    # a mirrored release whose rules size a newer, unmirrored vllm_version, at the user's risk (None: its own)
    assume_rules_of: str | None = None
    revision: str | None = None  # the Hub revision a Hub id is read at; None: main
    gpu: str | None = None  # any name nvidia-smi prints, or its short form
    gpu_memory_mib: int | None = None  # the CUDA total, for a GPU the catalog lacks
    gpu_compute_capability: str | None = None  # "8.9": with gpu_memory_mib, for a GPU the catalog lacks
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
    torch_release: str | None = None  # the build's PyTorch, whose libraries' non-torch memory is measured
    peer_to_peer: bool = True  # False: tensor-parallel ranks cannot reach each other directly
    nvswitch: bool = False  # the ranks share one NVSwitch board (8-GPU HGX: p4d/p4de/p5/p5e/p5en)
    dtype: str | None = None  # --dtype (None: auto)
    pipeline_parallel_size: int = 1


class EstimateRefused(Exception):
    """An argument colo cannot size with; `field` is the argument's name (the flag without dashes)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Estimate:
    """One rank's budget; at pipeline parallel, that of the binding stage, beside every stage's."""

    arch: ModelArchitecture  # as vLLM runs it: its dtype resolved
    gpu: GpuSpec
    rules: VllmRules
    budget: ProcessBudget
    hub: HubModel | None = None  # the Hub read the architecture came from, if it did
    source: str = "catalog"  # where the architecture was read: catalog, file or hub
    stages: tuple[ProcessBudget, ...] = ()  # one per pipeline stage (empty without pipeline parallelism)
    assumed_for: str | None = None  # the release asked for, where the rules are another's (assume_rules_of)

    @property
    def binding_stage(self) -> int:
        """The stage `budget` is: one that fails (as _binding picks it), else the one with the fewest KV blocks,
        which vLLM's engine gives every stage (docs/vllm-memory-rules.md §16)."""
        return self.budget.spec.stage.rank if self.budget.spec.stage else 0

    @property
    def ok(self) -> bool:
        return all(stage.ok for stage in self.stages) if self.stages else self.budget.ok


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
        return resolve_gpu(args.gpu, args.gpu_memory_mib, args.gpu_compute_capability)
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
    """A V0 fallback, a context past the model's, a TP or PP size vLLM rejects, a dtype the GPU or the model
    cannot run, an unknown flag, batch limits vLLM's scheduler config rejects."""
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
        pipeline_parallel_size=args.pipeline_parallel_size,
    )
    refusals = vllm_refusals(spec.rules, spec.arch, spec.gpu, settings)
    if (batch := batch_limits_refusal(spec.limits)) is not None:
        refusals.append(batch)
    if refusals:
        key = refusals[0].key.replace(".", "_")
        raise EstimateRefused(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key), refusals[0].message)


def _assumed(args: EstimateRequest) -> tuple[EstimateRequest, str | None]:
    """The request as sized: with assume_rules_of, the assumed release stands in for the one asked for
    everywhere a rule or table is read; the release asked for comes back, to be said in the output."""
    if args.assume_rules_of is None:
        return args, None
    if (refused := assumption_refusal(args.vllm_version, args.assume_rules_of)) is not None:
        raise EstimateRefused("assume_rules_of", refused)
    return replace(args, vllm_version=args.assume_rules_of, assume_rules_of=None), args.vllm_version


def estimate(args: EstimateRequest, *, kv_pool_bytes: int | None = None) -> Estimate:
    """Size the process as vLLM would. `kv_pool_bytes` fixes the KV pool whatever the release, for
    comparisons "given the pool" (the user's way is --kv-cache-memory-bytes, where the release has it)."""
    args, assumed_for = _assumed(args)
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
    try:
        arch = served_architecture(arch, args.dtype, rules, gpu_spec.compute_capability, pooling=args.pooling)
    except ValueError as exc:
        raise EstimateRefused("dtype", str(exc)) from None
    limits = resolve_limits(
        arch,
        gpu_spec,
        rules,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        pooling=args.pooling,
        language_model_only=args.language_model_only,
        mm_limits=args.limit_mm_per_prompt,
    )
    spec = ProcessSpec(
        arch=arch,
        gpu=gpu_spec,
        rules=rules,
        vllm_version=args.vllm_version,
        limits=limits,
        pooling=args.pooling,
        kv_cache_dtype=args.kv_cache_dtype,
        dtype=args.dtype,
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
        flashinfer_in_image=args.flashinfer_installed,
        torch_release=args.torch_release,
        peer_to_peer=args.peer_to_peer,
        nvswitch=args.nvswitch,
    )
    _refuse_what_vllm_refuses(args, spec)
    free = None if args.free_memory_gib is None else round(args.free_memory_gib * GIB)
    if args.pipeline_parallel_size == 1:
        budget = size_process(spec, free_before_bytes=free)
        return Estimate(arch, gpu_spec, rules, budget, hub, source, assumed_for=assumed_for)
    budgets = tuple(
        size_process(replace(spec, stage=stage), free_before_bytes=free)
        for stage in stages(arch.num_layers, args.pipeline_parallel_size)
    )
    return Estimate(arch, gpu_spec, rules, _binding(budgets), hub, source, budgets, assumed_for)


def _binding(budgets: tuple[ProcessBudget, ...]) -> ProcessBudget:
    """The stage vLLM's figures come from. A failing stage first: the one with the smallest pool where the
    release checks the whole model against the smallest stage pool (0.14-0.16), else the first in rank order,
    as get_kv_cache_configs checks the workers; else the one with the fewest KV blocks (the first of equals)."""
    failing = [b for b in budgets if not b.ok]
    if failing and failing[0].spec.rules.pp_kv_check == "whole_model_min_stage":
        return min(failing, key=lambda b: b.kv_bytes)
    if failing:
        return failing[0]
    return min(budgets, key=lambda b: b.capacity.num_blocks if b.capacity else 0)


def _stage_view(b: ProcessBudget, blocks_used: int) -> dict[str, Any]:
    stage = b.spec.stage
    assert stage is not None
    return {
        "rank": stage.rank,
        "layers": [stage.start, stage.end],
        **dict(zip(("embedding", "final_norm", "lm_head"), stage_holds(b.spec.arch, stage), strict=True)),
        "weights_gib": in_gib(b.weights_bytes),
        "activation_peak_gib": in_gib(b.activation_bytes),
        "non_torch_gib": in_gib(b.non_torch_bytes),
        "pp_communication_gib": in_gib(
            b.communication.before_snapshot + b.communication.in_budget + b.communication.unbudgeted
        ),
        "kv_cache_gib": in_gib(b.kv_bytes),
        "num_gpu_blocks": b.capacity.num_blocks if b.capacity else 0,
        "num_gpu_blocks_used": blocks_used,
        "startup_ok": b.startup.ok,
        "errors": list(b.errors),
    }


def _pipeline_view(result: Estimate) -> dict[str, Any]:
    """Every stage, the binding one, and the "Available KV cache memory" vLLM prints: each stage's own up to
    0.11.0, the first stage's only from 0.11.1 (logger.info_once, scope "local"), none before 0.9.1."""
    binding = result.budget
    used = binding.capacity.num_blocks if binding.capacity else 0
    logged = result.rules.pp_available_kv_logged_by
    first = result.stages[0]
    return {
        "pipeline_parallel_size": len(result.stages),
        "binding_stage": result.binding_stage,
        "binding_because": "it fails"
        if not binding.ok
        else "fewest KV blocks: the engine gives every stage that many",
        # which stages print "Available KV cache memory", and the figure where only the first does
        "available_kv_cache_logged_by": logged,
        "available_kv_cache_logged_gib": in_gib(first.kv_bytes) if logged == "first_stage" else None,
        "stages": [_stage_view(b, used) for b in result.stages],
    }


def estimate_view(result: Estimate) -> dict[str, Any]:
    view = {
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
    if result.assumed_for is not None:
        view = {
            "rules_assumed": assumed_rules_warning(result.assumed_for, result.budget.spec.vllm_version),
            **view,
        }
    if result.stages:
        view["pipeline"] = _pipeline_view(result)
        view["ok"] = result.ok
    return view
