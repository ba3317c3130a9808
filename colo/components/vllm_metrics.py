"""The metric names the dashboard and alerts query, and the label sets that pick out one stack's servers.

vLLM's names are those of `vllm/v1/metrics/loggers.py::PrometheusStatLogger` in every release colo mirrors
(0.10.1.1-0.34.0): the KV cache usage gauge (a fraction, 1 = full), running and waiting requests, the
preemption counter and the TTFT histogram exist throughout. The per-token latency histogram is
`vllm:time_per_output_token_seconds` up to 0.14 and `vllm:request_time_per_output_token_seconds` from 0.11,
so queries take either. DCGM's are the exporter's default counters (NVIDIA/dcgm-exporter
etc/default-counters.csv at 4.5.3-4.8.2): framebuffer memory used, in MiB, per GPU, labelled with the
pod and container the device plugin gave the GPU to (kubelet's pod-resources API).
"""

from __future__ import annotations

KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
REQUESTS_RUNNING = "vllm:num_requests_running"
REQUESTS_WAITING = "vllm:num_requests_waiting"
PREEMPTIONS = "vllm:num_preemptions_total"  # the counter vllm:num_preemptions, as Prometheus exposes it
TTFT_BUCKETS = "vllm:time_to_first_token_seconds_bucket"
TPOT_BUCKETS = (
    "vllm:request_time_per_output_token_seconds_bucket",
    "vllm:time_per_output_token_seconds_bucket",
)
GPU_MEMORY_USED_MIB = "DCGM_FI_DEV_FB_USED"
CONTAINER_RESTARTS = "kube_pod_container_status_restarts_total"  # kube-state-metrics

SERVER_LABELS = "namespace, pod, model_name"  # one series per server: vLLM labels by served model name


def in_namespace(metric: str, namespace: str, **extra: str) -> str:
    matchers = [f'namespace="{namespace}"', *(f'{key}=~"{value}"' for key, value in extra.items())]
    return f"{metric}{{{', '.join(matchers)}}}"


def pair_pods(pair: str) -> str:
    """The pods of a pair's Deployment: <deployment>-<replica set hash>-<suffix>."""
    return f"{pair}-[a-z0-9]+-[a-z0-9]+"


def tpot_rate(namespace: str, window: str = "5m") -> str:
    return " or ".join(f"rate({in_namespace(name, namespace)}[{window}])" for name in TPOT_BUCKETS)


def quantile(q: float, buckets: str) -> str:
    return f"histogram_quantile({q}, sum by (le, {SERVER_LABELS}) ({buckets}))"
