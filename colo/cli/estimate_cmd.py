"""`colo estimate`: one vLLM process (one GPU rank), sized as vLLM would size it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from colo.catalog import GIB, gpu, gpu_names
from colo.catalog.architecture import ModelArchitecture
from colo.catalog.models import architecture_from_path, catalog_architecture
from colo.catalog.quant_methods import QuantizationRefused, resolve_architecture
from colo.catalog.vllm_rules import rules_for, supported_range
from colo.cli.common import ExitCode, schema_choices
from colo.config.schema import KV_CACHE_DTYPE_CHOICES, QUANTIZATION_CHOICES, SpeculativeMethod
from colo.errors import ConfigError, Problem
from colo.plan.budget import ProcessSpec, size_process
from colo.plan.engine_limits import resolve_limits
from colo.plan.report import budget_view


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, help="catalog model id, a config.json, or a model directory"
    )
    parser.add_argument("--gpu", required=True, help=f"one of: {', '.join(gpu_names())}")
    parser.add_argument("--vllm-version", default=supported_range()[1], help="default: the newest mirrored")
    parser.add_argument("--gpu-memory-utilization", type=float)
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--max-num-batched-tokens", type=int)
    parser.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPE_CHOICES)
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATION_CHOICES,
        help="vLLM's own method names; default: what the checkpoint's config declares, as vLLM resolves it",
    )
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--runner", choices=("generate", "pooling"), default="generate")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--kv-cache-memory-bytes", type=int)
    parser.add_argument("--free-memory-gib", type=float, help="free memory at start instead of an idle GPU")
    parser.add_argument("--num-speculative-tokens", type=int, default=0)
    parser.add_argument("--speculative-method", choices=schema_choices(SpeculativeMethod))
    parser.add_argument("--json", action="store_true", help="print JSON (the default output is JSON too)")


def _architecture(model: str) -> ModelArchitecture:
    path = Path(model)
    if path.exists():
        return architecture_from_path(path, path.name)
    try:
        return catalog_architecture(model)
    except KeyError:
        raise ConfigError(
            [
                Problem(
                    "--model",
                    f"'{model}' is neither a catalog model nor a path to a config.json or model directory",
                )
            ]
        ) from None


def run(args: argparse.Namespace) -> int:
    try:
        gpu_spec = gpu(args.gpu)
        rules = rules_for(args.vllm_version)
    except (KeyError, ValueError) as exc:
        raise ConfigError([Problem("--gpu/--vllm-version", str(exc.args[0]))]) from None
    util = args.gpu_memory_utilization
    if util is not None and not 0 < util < 1:
        raise ConfigError([Problem("--gpu-memory-utilization", f"{util} is not a fraction between 0 and 1")])
    try:
        arch = resolve_architecture(
            _architecture(args.model),
            args.quantization,
            vllm_version=args.vllm_version,
            capability=gpu_spec.compute_capability,
        )
    except QuantizationRefused as exc:
        raise ConfigError([Problem("--quantization", str(exc))]) from None
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
        pooling=args.runner == "pooling",
        kv_cache_dtype=args.kv_cache_dtype,
        enforce_eager=args.enforce_eager,
        num_speculative_tokens=args.num_speculative_tokens,
        speculative_method=args.speculative_method,
        gpu_memory_utilization=args.gpu_memory_utilization,
        kv_cache_memory_bytes=args.kv_cache_memory_bytes,
        tensor_parallel_size=args.tensor_parallel_size,
    )
    free = None if args.free_memory_gib is None else round(args.free_memory_gib * GIB)
    budget = size_process(spec, free_before_bytes=free)

    out = {"model": arch.model_id, "gpu": gpu_spec.name, "rules": rules.label, **budget_view(budget)}
    print(json.dumps(out, indent=2))
    return ExitCode.OK if budget.ok else ExitCode.FAILS
