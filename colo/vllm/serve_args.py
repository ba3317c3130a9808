"""The `vllm serve` argument list for one server, for the pinned vLLM release.

Built as a list, never as a shell string: JSON values (`--compilation-config`, `--speculative-config`) are
serialised with json.dumps and travel as one argument each, so no YAML or shell quoting can mangle them
(the field report's capture sizes never took effect because Helm escaping broke that JSON).
"""

from __future__ import annotations

import json

from colo.roles import ROLES, Role
from colo.vllm.checkpoint.pooling import release_declared_pooling
from colo.vllm.process.budget import ProcessBudget, ProcessSpec, capture_sizes_for
from colo.vllm.rerank import reranker_overrides_argument


def _number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def vllm_arguments(
    budget: ProcessBudget,
    *,
    role: Role,
    model: str,
    served_name: str,
    model_path: str,
    extra_args: list[str],
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> list[str]:
    """`revision`: the Hub commit the budget was sized for, which vLLM then downloads (its tokenizer follows
    the model's revision unless told otherwise: vllm 0.8.5 config.py::ModelConfig.__init__, 0.20.0
    config/model.py::ModelConfig.__post_init__)."""
    spec = budget.spec
    role_spec = ROLES[role]
    args = [
        model_path,
        "--served-model-name",
        served_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(role_spec.port),
        "--gpu-memory-utilization",
        _number(spec.utilization),
        "--max-model-len",
        str(spec.limits.max_model_len),
        "--max-num-seqs",
        str(spec.limits.max_num_seqs),
        "--max-num-batched-tokens",
        str(spec.limits.max_num_batched_tokens),
    ]
    if spec.tensor_parallel_size > 1:
        args += ["--tensor-parallel-size", str(spec.tensor_parallel_size)]
    if revision is not None:
        args += ["--revision", revision]
    if trust_remote_code:
        args.append("--trust-remote-code")
    if spec.arch.quantization_flag is not None:
        args += ["--quantization", spec.arch.quantization_flag]
    if spec.kv_cache_memory_bytes is not None:
        args += ["--kv-cache-memory-bytes", str(spec.kv_cache_memory_bytes)]
    if spec.kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", spec.kv_cache_dtype]
    if spec.dtype is not None:  # only where the server sets it: omitted, vLLM resolves auto itself
        args += ["--dtype", spec.dtype]
    args += _runner_args(spec, role)
    args += _graph_args(spec)
    args += _multimodal_args(spec)
    if spec.speculative_method is not None:
        speculative = {
            "method": spec.speculative_method,
            "num_speculative_tokens": spec.num_speculative_tokens,
        }
        args += ["--speculative-config", json.dumps(speculative, separators=(",", ":"))]
    if role_spec.pooling:  # per-interval throughput logs of an embedding server are noise
        args.append("--disable-log-stats")
    return args + list(extra_args)


def _generation_args(spec: ProcessSpec) -> list[str]:
    """The flag that keeps a generative server generating where the release's automatic runner choice would make
    an embedder of its checkpoint: one whose modules.json names a sentence-transformers Pooling module
    (rules.st_pooling_auto_runner; vllm 0.10.1-0.34.0 config/model.py::ModelConfig._get_default_runner_type,
    0.8.0-0.9.2 config.py::ModelConfig._get_preferred_task). Nothing anywhere else, so other servers' arguments
    stay as they were."""
    rules = spec.rules
    if rules.st_pooling_auto_runner == "generate" or release_declared_pooling(spec.arch, rules) is None:
        return []
    return ["--task", "generate"] if rules.pooling_flag == "task" else ["--runner", "generate"]


def _runner_args(spec: ProcessSpec, role: Role) -> list[str]:
    """How the release names a pooling server: --task before 0.10.1, --runner (and --convert) after. A
    generative server names its runner only where vLLM would otherwise pick another (_generation_args)."""
    role_spec = ROLES[role]
    if not spec.pooling:
        return _generation_args(spec)
    # a reranker published as a causal LM scores through hf_overrides, which make it a classifier already
    overrides = reranker_overrides_argument(spec.arch) if role is Role.RERANKER else []
    if spec.rules.pooling_flag == "task":
        # before 0.10.1 there is no --runner (vllm 0.10.0 engine/arg_utils.py: only --task)
        return [
            "--task",
            "embed" if role_spec.convert is None else "score",
            *overrides,
        ]  # a classifier scores
    # `--task embed` was removed in 0.13; `--runner pooling` exists since 0.10.1.
    args = ["--runner", "pooling"]
    if overrides:
        return args + overrides
    if role_spec.convert is not None:
        args += ["--convert", role_spec.convert]
    return args


def _graph_args(spec: ProcessSpec) -> list[str]:
    if spec.enforce_eager:
        return ["--enforce-eager"]
    if spec.capture_sizes is not None:
        sizes = capture_sizes_for(spec)
        return ["--compilation-config", json.dumps({"cudagraph_capture_sizes": sizes}, separators=(",", ":"))]
    return []


def _multimodal_args(spec: ProcessSpec) -> list[str]:
    args = ["--language-model-only"] if spec.language_model_only else []
    if spec.mm_limits:
        args += ["--limit-mm-per-prompt", json.dumps(dict(spec.mm_limits), separators=(",", ":"))]
    if spec.skip_mm_profiling:
        args.append("--skip-mm-profiling")
    return args
