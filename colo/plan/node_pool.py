"""What a colo-managed GPU node pool looks like: AMI type, disk, size and scheduling marks. Pure data.

The component in colo.components.node_pool only translates this into AWS resources.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GpuSpec
from colo.config.schema import StackConfig
from colo.errors import ConfigError, Problem
from colo.plan.node_disk import MIN_VOLUME_GIB, disk_need_gib
from colo.plan.platform import AMI_TYPES
from colo.plan.scheduling import GPU_TAINT_KEY, node_labels
from colo.plan.stack import Plan

# The volume that holds container images: AL2023 has one root volume; Bottlerocket keeps a small OS
# volume on /dev/xvda and puts images and pod storage on the data volume /dev/xvdb.
IMAGE_VOLUME_DEVICES = {
    "al2023-nvidia": "/dev/xvda",
    "bottlerocket-nvidia": "/dev/xvdb",
}


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


def derived_volume_gib(plan: Plan) -> int:
    """Room for the node's images and, where the model volume is node-local, its weights; busiest node."""
    return max(MIN_VOLUME_GIB, disk_need_gib(plan.pairs))


def managed_node_pool(config: StackConfig, plan: Plan) -> NodePoolSpec | None:
    """The node group colo manages on EKS, or None when the GPU nodes already exist (pods select their labels) or
    Karpenter launches them (colo.plan.capacity)."""
    if config.node_pool.mode != "managed":
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
