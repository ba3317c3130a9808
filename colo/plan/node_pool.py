"""What a colo-managed GPU node pool looks like: AMI type, disk, size and scheduling marks. Pure data.

The component in colo.components.node_pool only translates this into AWS resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from colo.catalog import GIB, GpuSpec
from colo.config.schema import StackConfig
from colo.errors import ConfigError, Problem
from colo.plan.platform import AMI_TYPES
from colo.plan.scheduling import GPU_TAINT_KEY, node_labels
from colo.plan.stack import Plan

# The volume that holds container images: AL2023 has one root volume; Bottlerocket keeps a small OS
# volume on /dev/xvda and puts images and pod storage on the data volume /dev/xvdb.
IMAGE_VOLUME_DEVICES = {
    "al2023-nvidia": "/dev/xvda",
    "bottlerocket-nvidia": "/dev/xvdb",
}

# A vLLM image is ~10 GiB compressed; containerd keeps the compressed layers and the unpacked snapshot,
# and an image update briefly holds two versions.
IMAGE_ALLOWANCE_GIB = 30
SYSTEM_ALLOWANCE_GIB = 20  # OS, kubelet, logs, the weight-sync image
MIN_VOLUME_GIB = 100
VOLUME_STEP_GIB = 10


@dataclass(frozen=True)
class NodePoolSpec:
    cluster_name: str
    instance_type: str
    ami_type: str
    subnet_ids: tuple[str, ...]
    volume_device: str
    volume_gib: int
    desired_size: int
    min_size: int
    max_size: int
    labels: dict[str, str]
    taint_key: str
    gpu: GpuSpec  # what the budget used; checked against EC2 at preview
    gpus_per_node: int


def ami_type(config: StackConfig) -> str:
    image = config.cluster.node_image
    if image not in AMI_TYPES:
        raise ConfigError(
            [
                Problem(
                    "colo:cluster.nodeImage",
                    f"colo manages EKS node groups only with {' or '.join(AMI_TYPES)}; {image} nodes are "
                    f"built elsewhere, so set nodePool.mode: existing and nodePool.nodeSelector to select them",
                )
            ]
        )
    return AMI_TYPES[image]


def _server_checkpoint_bytes(plan: Plan, node: int) -> int:
    total = 0
    for pair in plan.pairs:
        if pair.placement.node != node:
            continue
        for server in pair.servers:
            budget = server.memory_plan.budget
            # a tensor-parallel rank holds 1/N of the weights: the files hold them all
            total += (
                budget.spec.arch.checkpoint_bytes or budget.weights_bytes * budget.spec.tensor_parallel_size
            )
    return total


def _images_on(plan: Plan, node: int) -> int:
    return len({s.image for p in plan.pairs if p.placement.node == node for s in p.servers})


def derived_volume_gib(plan: Plan) -> int:
    """Room for the node's images and, where the model volume is node-local, its weights; busiest node."""
    largest = 0
    for node in range(plan.node_count):
        weights_gib = ceil(_server_checkpoint_bytes(plan, node) / GIB)
        need = _images_on(plan, node) * IMAGE_ALLOWANCE_GIB + weights_gib + SYSTEM_ALLOWANCE_GIB
        largest = max(largest, need)
    stepped = ceil(largest / VOLUME_STEP_GIB) * VOLUME_STEP_GIB
    return max(MIN_VOLUME_GIB, stepped)


def managed_node_pool(config: StackConfig, plan: Plan) -> NodePoolSpec | None:
    """The pool colo manages on EKS, or None when the GPU nodes already exist (pods select their labels)."""
    if config.node_pool.mode == "existing":
        return None
    return node_pool_spec(config, plan)


def node_pool_spec(config: StackConfig, plan: Plan) -> NodePoolSpec:
    pool = config.node_pool
    # Every node holds placed pairs (or the spare GPU a rollout needs), so the pool never shrinks below
    # the plan; maxNodes, when given, is headroom for replacing a node without losing a pair.
    max_size = max(plan.node_count, pool.max_nodes or plan.node_count)
    return NodePoolSpec(
        cluster_name=config.cluster.name,
        instance_type=pool.instance_type,
        ami_type=ami_type(config),
        subnet_ids=tuple(pool.subnet_ids),
        volume_device=IMAGE_VOLUME_DEVICES[config.cluster.node_image],
        volume_gib=pool.root_volume_gib or derived_volume_gib(plan),
        desired_size=plan.node_count,
        min_size=plan.node_count,
        max_size=max_size,
        labels=node_labels(config),
        taint_key=GPU_TAINT_KEY,
        gpu=plan.gpu,
        gpus_per_node=plan.gpus_per_node,
    )
