"""Build one process spec the way `colo estimate` does, for rule-level tests."""

from __future__ import annotations

from typing import Any

from colo.catalog import gpu
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.budget import ProcessBudget, ProcessSpec, size_process
from colo.vllm.process.engine_limits import resolve_limits
from colo.vllm.rules import rules_for

# A Qwen3-0.6B-shaped decoder's config.json (the keys colo reads), without its architectures: the pooling tests
# write it under the class each case needs.
QWEN3_SMALL_DECODER: dict[str, Any] = {
    "model_type": "qwen3",
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "vocab_size": 151669,
    "tie_word_embeddings": True,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}


def process(
    model: str,
    gpu_name: str,
    version: str,
    *,
    max_model_len: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    **fields: Any,
) -> ProcessSpec:
    arch = catalog_architecture(model)
    gpu_spec = gpu(gpu_name)
    rules = rules_for(version)
    limits = resolve_limits(
        arch,
        gpu_spec,
        rules,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        pooling=bool(fields.get("pooling")),
    )
    return ProcessSpec(arch=arch, gpu=gpu_spec, rules=rules, vllm_version=version, limits=limits, **fields)


def sized(model: str, gpu_name: str, version: str, **kwargs: Any) -> ProcessBudget:
    return size_process(process(model, gpu_name, version, **kwargs))
