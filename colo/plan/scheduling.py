"""Where GPU pods may run: the node labels colo's node pool carries and the pods select, and the taint.

`make_plan` turns these into the plan's `node_selector`, `tolerations` and `device_plugin`; components
read them from the plan, never from the stack config.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.config.schema import StackConfig
from colo.errors import Problem
from colo.plan.compute_sharing import daemon_slices

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


def plugin_managed_elsewhere(config: StackConfig) -> bool:
    """Someone else runs the device plugin on these nodes: the stack says so, or the node image has one."""
    managed_by = config.node_pool.device_plugin.managed_by
    auto_mode = config.node_pool.mode == "auto"  # EKS Auto Mode runs NVIDIA's plugin itself
    return managed_by == "elsewhere" or auto_mode or config.cluster.node_image in PLUGIN_PROVIDED


def device_plugin(config: StackConfig, servers_per_gpu: int) -> DevicePluginPlan | None:
    """The plugin colo installs, or None where DRA replaces it or someone else runs one.

    NVIDIA's DRA driver refuses to share a node with the device plugin, so dra never gets one.
    """
    cluster = config.cluster
    if cluster.gpu_pairing == "dra" or plugin_managed_elsewhere(config):
        return None
    selector = node_selector(config)
    if config.node_pool.mode in ("managed", "karpenter"):
        # colo's node pool labels its nodes the way NVIDIA's chart affinity expects.
        selector[GPU_PRESENT_LABEL] = "true"
    return DevicePluginPlan(
        namespace=f"{cluster.namespace}-nvidia-device-plugin",
        node_selector=selector,
        time_slices=servers_per_gpu if cluster.gpu_pairing == "time-slice" else None,
    )


def _elsewhere_reason(config: StackConfig) -> str:
    if config.node_pool.device_plugin.managed_by == "elsewhere":
        return "nodePool.devicePlugin.managedBy: elsewhere"
    return f"nodeImage {config.cluster.node_image} brings its own"


def _slices_problem(config: StackConfig, needed: int) -> Problem | None:
    """time-slice on a plugin colo does not configure: safe only with the replicas the user confirmed."""
    path = "colo:nodePool.devicePlugin.sharedReplicas"
    confirmed = config.node_pool.device_plugin.shared_replicas
    what = "the most servers in a pair" + (", plus its MPS daemon" if daemon_slices(config) else "")
    if confirmed is None:
        return Problem(
            path,
            f"the device plugin on these nodes is managed elsewhere ({_elsewhere_reason(config)}), so colo "
            f"cannot set how many slices each GPU offers, and time-slice is safe only with exactly {needed} "
            f"({what}): fewer and a pair cannot start, more and another pod's slice "
            f"lands on a paired GPU, outside the memory budget. Check the plugin's config (timeSlicing with "
            f"renameByDefault: true, failRequestsGreaterThanOne: true and replicas: {needed} for "
            f"nvidia.com/gpu) and confirm it with sharedReplicas: {needed}; or choose another gpuPairing",
        )
    if confirmed != needed:
        effect = (
            "leaves slices that another pod can take on a paired GPU"
            if confirmed > needed
            else "cannot hold every server of a pair"
        )
        return Problem(
            path,
            f"time-slice needs exactly {needed} slices per GPU ({what}); {confirmed} "
            f"{effect}. Set the plugin's replicas to {needed} and sharedReplicas: {needed}",
        )
    return None


def device_plugin_problems(config: StackConfig) -> list[Problem]:
    """Contradictions between the pairing method and who runs the device plugin."""
    plugin, method = config.node_pool.device_plugin, config.cluster.gpu_pairing
    elsewhere = plugin_managed_elsewhere(config)
    problems: list[Problem] = []
    if plugin.managed_by == "elsewhere" and method == "dra":
        problems.append(
            Problem(
                "colo:nodePool.devicePlugin.managedBy",
                "gpuPairing dra needs NVIDIA's DRA driver, whose GPU kubelet plugin cannot run on nodes that "
                "also run the device plugin; give dra a node pool without one, or use uuid-handoff",
            )
        )
    if plugin.shared_replicas is not None and not (elsewhere and method == "time-slice"):
        problems.append(
            Problem(
                "colo:nodePool.devicePlugin.sharedReplicas",
                "only confirms the slices of a plugin managed elsewhere for gpuPairing time-slice; colo "
                "sets its own plugin's replicas, and the other methods use no slices. Remove it",
            )
        )
    if plugin.shares_by == "mps" and not (elsewhere and method == "time-slice"):
        problems.append(
            Problem(
                "colo:nodePool.devicePlugin.sharesBy",
                "describes a plugin managed elsewhere that shares GPUs for gpuPairing time-slice; colo's own "
                "plugin time-slices, and the other methods use no slices. Remove it",
            )
        )
    # Auto Mode's plugin has no time-slicing at all; colo.plan.capacity refuses time-slice there.
    if elsewhere and method == "time-slice" and config.node_pool.mode != "auto":
        needed = max(len(pair.servers()) for pair in config.pairs) + daemon_slices(config)
        found = _slices_problem(config, needed)
        problems += [found] if found else []
    return problems
