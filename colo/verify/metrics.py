"""The KV cache figures a running server publishes on /metrics: `vllm:cache_config_info`.

vLLM exposes its CacheConfig as an info gauge whose labels are every field as a string
(`vllm <release> vllm/v1/metrics/loggers.py::PrometheusStatLogger.log_metrics_info`, from
`CacheConfig.metrics_info`), the same in every release 0.10.1.1-0.34 (0.34 publishes it after its measured KV
sizing); `num_gpu_blocks` and `block_size` are the two colo plans. The labels are the API server's copy of the
config: for a hybrid (attention + Mamba or Gated DeltaNet) model the engine raises the block size so that an
attention page holds a state page (`vllm 0.33.0 platforms/interface.py::Platform._align_hybrid_block_size`,
logged as "Setting attention block size to N tokens"), and `block_size` here stays the default. From 0.33 the
engine hands its figure back as `effective_attention_block_size` (`vllm 0.33.0 v1/engine/core_client.py`,
`config/cache.py::CacheConfig`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CACHE_CONFIG_INFO = "vllm:cache_config_info"
_SAMPLE = re.compile(r"^vllm:cache_config_info\{(?P<labels>.*)\}\s+\S+\s*$", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class CacheConfigInfo:
    num_gpu_blocks: int | None
    block_size: int | None  # the API server's CacheConfig.block_size: not the engine's for hybrid models
    effective_attention_block_size: int | None = None  # the engine's full-attention block size (0.33+)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:  # "None" before the KV cache exists
        return None


def cache_config_info(metrics_text: str) -> CacheConfigInfo | None:
    """The first `vllm:cache_config_info` sample in a Prometheus text exposition; None when absent."""
    match = _SAMPLE.search(metrics_text)
    if match is None:
        return None
    labels = dict(_LABEL.findall(match.group("labels")))
    return CacheConfigInfo(
        _int(labels.get("num_gpu_blocks")),
        _int(labels.get("block_size")),
        _int(labels.get("effective_attention_block_size")),
    )
