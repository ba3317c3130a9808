"""The KV cache figures a running server publishes on /metrics: `vllm:cache_config_info`.

vLLM exposes its CacheConfig as an info gauge whose labels are every field as a string
(`vllm <release> vllm/v1/metrics/loggers.py::PrometheusStatLogger.log_metrics_info`, from
`CacheConfig.metrics_info`), the same in every release 0.10.1.1-0.34 (0.34 publishes it after its measured KV sizing); `num_gpu_blocks` and `block_size` are
the two colo plans.
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
    block_size: int | None


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
    return CacheConfigInfo(_int(labels.get("num_gpu_blocks")), _int(labels.get("block_size")))
