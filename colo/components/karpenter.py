"""The GPU capacity Karpenter launches for a stack's pairs: a karpenter.sh NodePool, and for self-managed Karpenter
its karpenter.k8s.aws EC2NodeClass (nodePool.mode karpenter), or a NodePool on an EKS Auto Mode NodeClass (auto).

colo.plan.capacity plans both objects from the pairs' plan (the stack plan, where the program made one already);
this component only declares them, through the Kubernetes provider it is given (colo's program gives it the
stack's, colo.components.cluster_provider). Karpenter (or Auto Mode) must already run in the cluster: colo installs
neither, nor the node role (docs/capacity.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from colo.components.contract import token
from colo.components.errors import refused
from colo.components.labels import colo_labels
from colo.components.pool_plan import argument_path, feasible_plan, stack_pieces
from colo.config.schema import Budget, Cluster, NodePool, Pair, StackConfig, Storage
from colo.errors import ColoError, ConfigError, Problem
from colo.plan.capacity import EC2_NODE_CLASS_API, NODE_POOL_API, CapacitySpec, capacity_spec
from colo.plan.stack import Plan

COMPONENT = "KarpenterNodePool"
# First released under this scheme: no earlier type to alias.
TYPE = token(COMPONENT)


@dataclass(frozen=True)
class KarpenterNodePoolArgs:
    """The NodePool (and EC2NodeClass) that launch the GPU nodes of these pairs, planned as `colo plan` plans a
    stack of these pieces; `node_pool.mode` is karpenter or auto. A plan that does not fit is refused before
    anything is registered."""

    pairs: Sequence[Pair]  # every pair the capacity runs
    cluster: Cluster = field(default_factory=Cluster)  # name (labels, discovery tag, node role), nodeImage
    # mode, gpu, gpusPerNode or instanceType, spareGpus, maxNodes, rootVolumeGiB, subnetIds, karpenter.
    node_pool: NodePool = field(default_factory=lambda: NodePool(mode="karpenter"))
    storage: Storage = field(default_factory=Storage)
    budget: Budget = field(default_factory=Budget)
    hub_token: str | None = None  # for gated Hub models at plan time; default HF_TOKEN
    project_dir: Path | None = None  # where relative `profile` paths are read; default the working directory

    @classmethod
    def of_stack(cls, config: StackConfig) -> KarpenterNodePoolArgs:
        return cls(**stack_pieces(config))


def capacity_plan(name: str, args: KarpenterNodePoolArgs, plan: Plan | None = None) -> CapacitySpec:
    """The objects' plan, from the plan of the pairs (`plan`, where the program planned its stack already; else
    planned here); a refusal (ProgramError) where that plan is refused or the mode is not Karpenter's."""
    try:
        plan = feasible_plan(args, plan)
        spec = capacity_spec(plan)
        if spec is None:
            raise ConfigError(
                [
                    Problem(
                        "colo:nodePool.mode",
                        f"is {plan.config.node_pool.mode}; {COMPONENT} needs karpenter or auto",
                    )
                ]
            )
        return spec
    except ColoError as error:
        raise refused(f"{COMPONENT} {name}", error, argument_path) from None


class KarpenterNodePool(pulumi.ComponentResource):
    node_pool_name: pulumi.Output[str]
    node_labels: pulumi.Output[dict[str, str]]  # what every node carries: the pairs' node selector

    def __init__(
        self,
        name: str,
        args: KarpenterNodePoolArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
    ):
        """`plan`: the stack plan of the pool's pairs, where the program planned its stack already (colo's own
        does); by default the pool plans its pairs from `args`."""
        spec = capacity_plan(name, args, plan)  # raises before anything is registered
        super().__init__(TYPE, name, None, opts)
        labels = colo_labels(args.cluster.name, "gpu-capacity")
        metadata = k8s.meta.v1.ObjectMetaArgs(name=spec.name, labels=labels)
        depends: list[pulumi.Resource] = []
        node_class = spec.ec2_node_class_body()
        if node_class is not None:
            depends.append(
                k8s.apiextensions.CustomResource(
                    f"{name}-node-class",
                    api_version=EC2_NODE_CLASS_API,
                    kind="EC2NodeClass",
                    metadata=metadata,
                    spec=node_class,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        pool = k8s.apiextensions.CustomResource(
            f"{name}-node-pool",
            api_version=NODE_POOL_API,
            kind="NodePool",
            metadata=metadata,
            spec=spec.node_pool_body(),
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
        self.node_pool_name = pool.id.apply(lambda _: spec.name)  # known once the NodePool is declared
        self.node_labels = pulumi.Output.from_input(dict(spec.labels))
        self.register_outputs({"nodePoolName": self.node_pool_name, "nodeLabels": self.node_labels})
