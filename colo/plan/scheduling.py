"""Where GPU pods may run: the node labels colo's node pool carries and the pods select, and the taint."""

from __future__ import annotations

from colo.config.schema import StackConfig

POOL_LABEL = "colo.dev/gpu-pool"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # what the NVIDIA device plugin chart's affinity looks for
GPU_TAINT_KEY = "nvidia.com/gpu"


def node_labels(config: StackConfig) -> dict[str, str]:
    """Labels a colo-managed node pool puts on its nodes."""
    return {POOL_LABEL: config.cluster.name, GPU_PRESENT_LABEL: "true"}


def node_selector(config: StackConfig) -> dict[str, str]:
    """What GPU pods select: colo's pool label, or the user's labels for nodes managed elsewhere."""
    if config.node_pool.mode == "existing" and config.node_pool.node_selector:
        return dict(config.node_pool.node_selector)
    return {POOL_LABEL: config.cluster.name}


def gpu_tolerations() -> list[dict[str, str]]:
    return [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
