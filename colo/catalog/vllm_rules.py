"""The memory rules of each supported vLLM release, loaded from vllm_rules.yaml.

One field per rule that changed between releases, named after what vLLM calls it; the YAML says which source
file of which release each value was read from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml


def parse_version(text: str) -> tuple[int, ...]:
    parts = text.split(".post")[0].split(".")
    return tuple(int(p) for p in parts)


@dataclass(frozen=True)
class VllmRules:
    """What changed between releases; each field is documented in vllm_rules.yaml."""

    first: str
    last: str
    default_gpu_memory_utilization: float
    requested_memory_ceil: bool
    cudagraph_estimate_subtracted: bool
    v2_runner: str
    v2_estimate_zero: bool
    cudagraph_mode: str
    capture_rule: str
    capture_spec_multiplier: bool
    capture_append_max_num_batched_tokens: bool
    capture_append_max_num_seqs: bool
    kv_tokens_from_concurrency: bool
    null_block_reserved: bool
    sliding_inflight_batches: int
    batch_tier_160gib: bool
    has_kv_cache_memory_bytes: bool
    cublas_in_baseline: bool
    error_names_device: bool
    topk_topp_sorts: bool
    uuid_in_cuda_visible_devices: bool
    source: str

    @property
    def label(self) -> str:
        return f"vLLM {self.first}-{self.last}"

    def startup_error(self, *, free_gib: float, total_gib: float, util: float, requested_gib: float) -> str:
        device = " cuda:0" if self.error_names_device else ""
        return (
            f"ValueError: Free memory on device{device} ({free_gib:.2f}/{total_gib:.2f} GiB) on startup is less "
            f"than desired GPU memory utilization ({util}, {requested_gib:.2f} GiB). Decrease GPU memory "
            f"utilization or reduce GPU memory used by other processes."
        )


_V2_LISTED_SIX = {
    "Qwen3ForCausalLM",
    "DeepseekV2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "GraniteMoeForCausalLM",
    "LlamaForCausalLM",
    "MistralForCausalLM",
}


def runs_v2_model_runner(
    rules: VllmRules, *, architecture: str, generate: bool, moe: bool, hybrid: bool, quantized: bool
) -> bool:
    """`VllmConfig.use_v2_model_runner` defaults, release by release (docs/vllm-memory-rules.md §3)."""
    kind = rules.v2_runner
    if kind == "none":
        return False
    if kind == "all":
        return True
    if not generate:
        return False
    if kind == "qwen3_dense":
        return architecture == "Qwen3ForCausalLM" and not moe and not quantized
    if kind == "qwen3_llama_mistral_dense":
        return architecture in {"Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"} and not (
            moe or quantized
        )
    if kind == "listed_six":
        return architecture in _V2_LISTED_SIX
    if kind == "dense_text":
        listed_moe = {"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"}
        return not hybrid and (not moe or architecture in listed_moe)
    raise ValueError(f"unknown v2_runner rule {kind!r}")


@cache
def _load() -> tuple[list[VllmRules], dict[str, Any]]:
    text = resources.files("colo.catalog").joinpath("vllm_rules.yaml").read_text()
    data = yaml.safe_load(text)
    fields = set(VllmRules.__dataclass_fields__)
    rules = [VllmRules(**{k: v for k, v in entry.items() if k in fields}) for entry in data["releases"]]
    return sorted(rules, key=lambda r: parse_version(r.first)), data


def supported_range() -> tuple[str, str]:
    rules, _ = _load()
    return rules[0].first, rules[-1].last


def rules_for(version: str) -> VllmRules:
    """Rules for one release; raises ValueError naming the supported range when colo does not mirror it."""
    rules, _ = _load()
    wanted = parse_version(version)
    chosen = None
    for entry in rules:
        if parse_version(entry.first) <= wanted:
            chosen = entry
    first, last = supported_range()
    if chosen is None or wanted[:2] > parse_version(last)[:2]:
        raise ValueError(
            f"vLLM {version} is outside the releases whose memory rules colo mirrors ({first} to {last}); "
            f"pin a version in that range"
        )
    return chosen


def constants() -> dict[str, Any]:
    """Version-independent figures with their sources (non-torch growth, graph cost, sampler factors)."""
    _, data = _load()
    return dict(data["constants"])


def accepts_gpu_uuid_in_cuda_visible_devices(version: str) -> bool:
    """Abbreviated UUIDs fail in every release (vllm#51677), so colo only ever passes the full one."""
    return rules_for(version).uuid_in_cuda_visible_devices
