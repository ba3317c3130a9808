"""`colo estimate`: one vLLM process (one GPU rank), sized as vLLM would size it."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from colo.catalog import GIB, gpu, gpu_names
from colo.catalog.architecture import ModelArchitecture
from colo.catalog.models import architecture_from_path, catalog_architecture
from colo.catalog.vllm_rules import rules_for, supported_range
from colo.errors import ConfigError, Problem
from colo.plan.budget import ProcessSpec, size_process
from colo.plan.engine_limits import resolve_limits
from colo.plan.refusals import ServerSettings, vllm_refusals
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
    parser.add_argument("--kv-cache-dtype", default="auto", choices=("auto", "fp8", "fp8_e4m3", "fp8_e5m2"))
    parser.add_argument("--quantization", choices=("none", "fp8", "awq", "gptq", "nvfp4"))
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--runner", choices=("generate", "pooling"), default="generate")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--kv-cache-memory-bytes", type=int)
    parser.add_argument("--free-memory-gib", type=float, help="free memory at start instead of an idle GPU")
    parser.add_argument("--num-speculative-tokens", type=int, default=0)
    parser.add_argument("--speculative-method", choices=("mtp", "eagle", "eagle3", "ngram"))
    parser.add_argument(
        "--allow-long-max-model-len", action="store_true", help="as VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    )
    parser.add_argument("--language-model-only", action="store_true", help="no vision tower (vLLM >= 0.17)")
    parser.add_argument(
        "--limit-mm-per-prompt", type=json.loads, default={}, help='e.g. \'{"image": 0, "video": 0}\''
    )
    parser.add_argument(
        "--skip-mm-profiling", action="store_true", help="vision encoder not profiled (vLLM >= 0.10.1)"
    )
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


def _flag(key: str) -> str:
    """The flag for a stack key: maxModelLen -> --max-model-len, vllm.version -> --vllm-version."""
    return "--" + re.sub(r"[A-Z]", lambda m: "-" + m.group(0).lower(), key.replace(".", "-"))


def _settings(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        version=args.vllm_version,
        pooling=args.runner == "pooling",
        kv_cache_dtype=args.kv_cache_dtype,
        speculative_method=args.speculative_method,
        max_model_len=args.max_model_len,
        tensor_parallel_size=args.tensor_parallel_size,
        allow_long_max_model_len=args.allow_long_max_model_len,
        language_model_only=args.language_model_only,
        skip_mm_profiling=args.skip_mm_profiling,
    )


def run(args: argparse.Namespace) -> int:
    try:
        gpu_spec = gpu(args.gpu)
        rules = rules_for(args.vllm_version)
    except (KeyError, ValueError) as exc:
        raise ConfigError([Problem("--gpu/--vllm-version", str(exc.args[0]))]) from None
    util = args.gpu_memory_utilization
    if util is not None and not 0 < util < 1:
        raise ConfigError([Problem("--gpu-memory-utilization", f"{util} is not a fraction between 0 and 1")])
    arch = _architecture(args.model)
    if args.quantization:
        arch = arch.with_quantization(args.quantization)
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
        language_model_only=args.language_model_only,
        mm_limits=tuple(sorted(args.limit_mm_per_prompt.items())),
        skip_mm_profiling=args.skip_mm_profiling,
    )
    refused = vllm_refusals(rules, arch, gpu_spec, _settings(args))
    if refused:
        raise ConfigError([Problem(_flag(r.key), r.message) for r in refused])
    free = None if args.free_memory_gib is None else round(args.free_memory_gib * GIB)
    budget = size_process(spec, free_before_bytes=free)

    out = {"model": arch.model_id, "gpu": gpu_spec.name, "rules": rules.label, **budget_view(budget)}
    print(json.dumps(out, indent=2))
    return 0 if budget.ok else 1
