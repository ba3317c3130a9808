"""The GPU node pool colo manages on an existing EKS cluster: node role, launch template, node group."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_aws as aws

from colo.components.contract import renamed, token
from colo.components.errors import refused
from colo.components.pool_plan import argument_path, feasible_plan, stack_pieces
from colo.config.schema import Budget, Cluster, NodePool, Pair, StackConfig, Storage
from colo.errors import ColoError, ConfigError
from colo.plan.instance_check import ReportedGpus, gpu_mismatch_problems
from colo.plan.node_pool import NodePoolSpec, node_pool_spec
from colo.plan.stack import Plan

COMPONENT = "GpuNodePool"

# Each policy is one thing a node must do to join and run pods:
#   AmazonEKSWorkerNodePolicy: the kubelet describes its instance and registers with the cluster.
#   AmazonEC2ContainerRegistryPullOnly: pull the EKS add-on images (aws-node, kube-proxy, pause) from
#     ECR; narrower than ...ReadOnly, which can also list and describe repositories.
#   AmazonEKS_CNI_Policy: the VPC CNI (aws-node) assigns pod IPs with the node's credentials unless the
#     cluster gave it its own IRSA or Pod Identity role; colo joins a cluster it does not own and cannot
#     tell, and without it the nodes never become Ready.
NODE_POLICIES = {
    "worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "ecr-pull": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "cni": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
}
# Pods cannot reach the instance metadata service (one hop: the node itself), so no pod can borrow the
# node role; the weight-sync step gets its own credentials through its service account.
IMDS_HOP_LIMIT = 1


@dataclass(frozen=True)
class GpuNodePoolArgs:
    """An EKS managed node group of GPU nodes, sized by the plan of the pairs it will run: enough nodes for
    them (and nodePool.spareGpus), a disk for their images and weights, the labels and taint they select.

    `cluster`, `node_pool`, `pairs`, `storage` and `budget` are a stack's pieces, planned as `colo plan`
    plans that stack (a plan that does not fit is refused before anything is registered); `cluster_name`
    and `subnet_ids` may be other resources' outputs (an aws.eks.Cluster, a VPC's subnets)."""

    cluster_name: pulumi.Input[str]  # the EKS cluster the nodes join
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    pairs: Sequence[Pair]  # every pair the pool runs
    cluster: Cluster = field(default_factory=Cluster)  # nodeImage (the AMI); name labels the nodes
    # gpu, instanceType, gpusPerNode, spareGpus, rootVolumeGiB, maxNodes; its subnetIds are not read.
    node_pool: NodePool = field(default_factory=NodePool)
    storage: Storage = field(default_factory=Storage)
    budget: Budget = field(default_factory=Budget)
    hub_token: str | None = None  # for gated Hub models at plan time; default HF_TOKEN
    project_dir: Path | None = None  # where relative `profile` paths are read; default the working directory

    @classmethod
    def of_stack(cls, config: StackConfig) -> GpuNodePoolArgs:
        """The pool a stack's config describes (colo's own program declares its pool so)."""
        return cls(
            cluster_name=config.cluster.name,
            subnet_ids=list(config.node_pool.subnet_ids),
            **stack_pieces(config),
        )


def node_pool_plan(name: str, args: GpuNodePoolArgs, plan: Plan | None = None) -> NodePoolSpec:
    """What the pool looks like by the plan of its pairs (`plan`, where the program planned its stack already;
    else planned here); a refusal (ProgramError) where that plan is refused."""
    label = f"{COMPONENT} {name}"
    try:
        plan = feasible_plan(args, plan)
        return node_pool_spec(plan.config, plan)
    except ColoError as error:
        raise refused(label, error, argument_path) from None


class GpuNodePool(pulumi.ComponentResource):
    node_group_name: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    node_labels: pulumi.Output[dict[str, str]]  # what every node carries: a pod's node selector

    def __init__(
        self,
        name: str,
        args: GpuNodePoolArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
    ):
        """`plan`: the stack plan of the pool's pairs, where the program planned its stack already (colo's own
        does); by default the pool plans its pairs from `args`."""
        spec = node_pool_plan(name, args, plan)  # raises before anything is registered
        super().__init__(token("GpuNodePool"), name, None, renamed("GpuNodePool", opts))
        self._name = name
        self._spec = spec
        self._args = args
        role, attachments = self._define_node_role()
        template = self._define_launch_template()
        checked_instance_type = self._check_instance_type()
        group = self._define_node_group(role, attachments, template, checked_instance_type)
        self.node_group_name = group.node_group_name
        self.node_role_arn = role.arn
        self.node_labels = pulumi.Output.from_input(dict(spec.labels))
        self.register_outputs(
            {
                "nodeGroupName": self.node_group_name,
                "nodeRoleArn": self.node_role_arn,
                "nodeLabels": self.node_labels,
            }
        )

    def _define_node_role(self) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ec2.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        role = aws.iam.Role(
            f"{self._name}-node-role",
            assume_role_policy=json.dumps(trust),
            description=pulumi.Output.concat("GPU nodes of colo on EKS cluster ", self._args.cluster_name),
            opts=pulumi.ResourceOptions(parent=self),
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{self._name}-{short}",
                role=role.name,
                policy_arn=arn,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for short, arn in NODE_POLICIES.items()
        ]
        return role, attachments

    def _define_launch_template(self) -> aws.ec2.LaunchTemplate:
        spec = self._spec
        # Disk size lives in the launch template (EKS rejects diskSize beside one); no AMI, subnet or
        # instance profile here, so EKS keeps choosing the NVIDIA AMI and merging its bootstrap.
        return aws.ec2.LaunchTemplate(
            f"{self._name}-lt",
            description="colo GPU nodes: image volume sized for vLLM images and weights, IMDSv2 only",
            update_default_version=True,
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=spec.volume_device,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=spec.volume_gib,
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=IMDS_HOP_LIMIT,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _check_instance_type(self) -> pulumi.Output[str]:
        """The instance type, released only once EC2 confirms it carries the GPUs the budget used."""
        spec = self._spec
        reported = aws.ec2.get_instance_type_output(
            instance_type=spec.instance_type, opts=pulumi.InvokeOutputOptions(parent=self)
        )

        def verify(result: aws.ec2.GetInstanceTypeResult) -> str:
            gpus = list(result.gpuses or [])
            first = gpus[0] if gpus else None
            answer = ReportedGpus(
                instance_type=spec.instance_type,
                name=first.name if first else None,
                count=sum(int(g.count) for g in gpus),
                memory_mib=int(first.memory_size) if first else None,
            )
            problems = gpu_mismatch_problems(spec.gpu, spec.gpus_per_node, answer)
            if problems:
                raise refused(f"{COMPONENT} {self._name}", ConfigError(problems), argument_path)
            return spec.instance_type

        return reported.apply(verify)

    def _define_node_group(
        self,
        role: aws.iam.Role,
        attachments: list[aws.iam.RolePolicyAttachment],
        template: aws.ec2.LaunchTemplate,
        instance_type: pulumi.Output[str],
    ) -> aws.eks.NodeGroup:
        spec = self._spec
        return aws.eks.NodeGroup(
            f"{self._name}-ng",
            cluster_name=self._args.cluster_name,
            node_role_arn=role.arn,
            subnet_ids=self._args.subnet_ids,
            instance_types=instance_type.apply(lambda checked: [checked]),
            ami_type=spec.ami_type,
            capacity_type="ON_DEMAND",
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                desired_size=spec.desired_size, min_size=spec.min_size, max_size=spec.max_size
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            labels=spec.labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=spec.taint_key, value="true", effect="NO_SCHEDULE")],
            # The node role must hold its policies before nodes boot, and keep them until they are gone.
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )
