"""The GPU node pool colo manages on an existing EKS cluster: node role, launch template, node group."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from colo.components.errors import ProgramError
from colo.errors import ConfigError
from colo.plan.instance_check import ReportedGpus, gpu_mismatch_problems
from colo.plan.node_pool import NodePoolSpec

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
    spec: NodePoolSpec


class GpuNodePool(pulumi.ComponentResource):
    node_group_name: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("colo:node_pool:GpuNodePool", name, None, opts)
        self._name = name
        self._spec = args.spec
        role, attachments = self._define_node_role()
        template = self._define_launch_template()
        checked_instance_type = self._check_instance_type()
        group = self._define_node_group(role, attachments, template, checked_instance_type)
        self.node_group_name = group.node_group_name
        self.node_role_arn = role.arn
        self.register_outputs({"nodeGroupName": self.node_group_name, "nodeRoleArn": self.node_role_arn})

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
            description=f"GPU nodes of colo on EKS cluster {self._spec.cluster_name}",
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
                raise ProgramError(ConfigError(problems))
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
            cluster_name=spec.cluster_name,
            node_role_arn=role.arn,
            subnet_ids=list(spec.subnet_ids),
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


def declare_node_pool(spec: NodePoolSpec | None) -> pulumi.Resource | None:
    """A managed pool on EKS, or nothing at all when GPU nodes already exist (pods select their labels)."""
    if spec is None:
        return None
    return GpuNodePool(spec.cluster_name, GpuNodePoolArgs(spec=spec))
