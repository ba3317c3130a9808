"""Where GPU pods may run: the node labels colo's node pool carries and the pods select, and the taint.

`make_plan` turns these into the plan's `node_selector`, `tolerations` and `device_plugin`; components
read them from the plan, never from the stack config.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.config.schema import StackConfig

POOL_LABEL = "colo.dev/gpu-pool"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # what the NVIDIA device plugin chart's affinity looks for
GPU_TAINT_KEY = "nvidia.com/gpu"
# Node images whose NVIDIA device plugin someone else runs: Bottlerocket builds it in (time-slicing is a
# Bottlerocket setting there), and the GPU Operator deploys and configures its own.
PLUGIN_PROVIDED = {"bottlerocket-nvidia", "gpu-operator-cdi"}


@dataclass(frozen=True)
class DevicePluginPlan:
    """NVIDIA's device plugin as colo installs it: its own namespace, the GPU nodes, and time-slicing."""

    namespace: str
    node_selector: dict[str, str]
    time_slices: int | None  # replicas per GPU for time-slicing; None = whole GPUs


def node_labels(config: StackConfig) -> dict[str, str]:
    """Labels a colo-managed node pool puts on its nodes."""
    return {POOL_LABEL: config.cluster.name, GPU_PRESENT_LABEL: "true"}


def node_selector(config: StackConfig) -> dict[str, str]:
    """What GPU pods select: colo's pool label, or the user's labels for nodes managed elsewhere."""
    if config.node_pool.mode == "existing" and config.node_pool.node_selector:
        return dict(config.node_pool.node_selector)
    return {POOL_LABEL: config.cluster.name}


def gpu_tolerations() -> tuple[dict[str, str], ...]:
    return ({"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},)


def device_plugin(config: StackConfig, servers_per_gpu: int) -> DevicePluginPlan | None:
    """The plugin colo installs, or None where DRA replaces it or the node image brings its own.

    NVIDIA's DRA driver refuses to share a node with the device plugin, so dra never gets one.
    """
    cluster = config.cluster
    if cluster.gpu_pairing == "dra" or cluster.node_image in PLUGIN_PROVIDED:
        return None
    selector = node_selector(config)
    if config.node_pool.mode == "managed":
        # colo's node pool labels its nodes the way NVIDIA's chart affinity expects.
        selector[GPU_PRESENT_LABEL] = "true"
    return DevicePluginPlan(
        namespace=f"{cluster.namespace}-nvidia-device-plugin",
        node_selector=selector,
        time_slices=servers_per_gpu if cluster.gpu_pairing == "time-slice" else None,
    )
