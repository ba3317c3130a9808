"""`colo preflight` for nodePool.mode karpenter and auto: what Karpenter (or EKS Auto Mode) needs from AWS before it
can launch the plan's GPU nodes, checked with boto3.

The node role exists and lets EC2 assume it; the subnets and security groups the EC2NodeClass selects exist; at
least one candidate instance type is offered in the subnets' zones; EC2 says each candidate carries the GPUs the
budget used; for Auto Mode, the cluster runs it. What the cluster itself holds (the CRDs, Auto Mode's NodeClass)
is read through the Kubernetes API (colo.kube_preflight).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError

from colo.aws.preflight import Check, ClientFactory, check_instance_gpus_of
from colo.config.schema import StackConfig
from colo.plan.capacity import DISCOVERY_TAG, CapacitySpec, node_role

EC2_PRINCIPAL = "ec2.amazonaws.com"


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "error"))


def _trusts_ec2(document: Any) -> bool:
    """Whether a role's trust policy lets EC2 instances assume it (the instance profile Karpenter makes of it)."""
    if isinstance(document, str):  # IAM returns it URL-encoded; boto3 usually decodes it already
        document = json.loads(unquote(document))
    for statement in document.get("Statement", []):
        principal = statement.get("Principal", {})
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        services = [services] if isinstance(services, str) else services
        if statement.get("Effect") == "Allow" and EC2_PRINCIPAL in services:
            return True
    return False


def check_node_role(iam: Any, config: StackConfig) -> Check:
    name = node_role(config)
    try:
        role = iam.get_role(RoleName=name)["Role"]
    except ClientError as exc:
        if _error_code(exc) != "NoSuchEntity":
            raise
        return Check(
            "Karpenter node role",
            False,
            f"no IAM role named {name}",
            "create it with an EKS access entry (Karpenter's getting-started template names it "
            "KarpenterNodeRole-<cluster>), or set colo:nodePool.karpenter.nodeRole to the nodes' role",
        )
    if not _trusts_ec2(role.get("AssumeRolePolicyDocument", {})):
        return Check(
            "Karpenter node role",
            False,
            f"{name} does not let {EC2_PRINCIPAL} assume it, so no node can use it",
            f"allow sts:AssumeRole for the service {EC2_PRINCIPAL} in its trust policy",
        )
    return Check("Karpenter node role", True, f"{role['Arn']} exists and EC2 may assume it")


def _discovery_filter(config: StackConfig) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{DISCOVERY_TAG}", "Values": [config.cluster.name]}]


def capacity_subnets(
    ec2: Any, config: StackConfig, cluster: dict[str, Any] | None
) -> tuple[dict[str, str], str]:
    """subnet -> zone of the subnets the nodes may land in, and where they were found: nodePool.subnetIds, the
    karpenter.sh/discovery tag (karpenter), or the cluster's own subnets (auto, which colo cannot read further)."""
    pool = config.node_pool
    if pool.subnet_ids:
        found = ec2.describe_subnets(SubnetIds=list(pool.subnet_ids))["Subnets"]
        source = "colo:nodePool.subnetIds"
    elif pool.mode == "karpenter":
        found = ec2.describe_subnets(Filters=_discovery_filter(config))["Subnets"]
        source = f"subnets tagged {DISCOVERY_TAG}: {config.cluster.name}"
    else:
        ids = list((cluster or {}).get("resourcesVpcConfig", {}).get("subnetIds", []))
        found = ec2.describe_subnets(SubnetIds=ids)["Subnets"] if ids else []
        source = "the cluster's subnets"
    return {s["SubnetId"]: s["AvailabilityZone"] for s in found}, source


def check_candidates_offered(ec2: Any, spec: CapacitySpec, zones: dict[str, str], source: str) -> Check:
    name = "GPU instance types in the nodes' zones"
    if not zones:
        return Check(
            name,
            False,
            f"no subnets found ({source})",
            f"tag the cluster's private subnets {DISCOVERY_TAG}: <cluster.name>, or list them in "
            "colo:nodePool.subnetIds",
        )
    offers = ec2.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[
            {"Name": "instance-type", "Values": list(spec.instance_types)},
            {"Name": "location", "Values": sorted(set(zones.values()))},
        ],
    )["InstanceTypeOfferings"]
    where: dict[str, set[str]] = {}
    for offer in offers:
        where.setdefault(offer["InstanceType"], set()).add(offer["Location"])
    if not where:
        return Check(
            name,
            False,
            f"none of {', '.join(spec.instance_types)} is offered in {', '.join(sorted(set(zones.values())))} "
            f"({source})",
            "add subnets in zones that offer them, or choose another colo:nodePool.gpu",
        )
    offered = "; ".join(
        f"{itype} in {', '.join(sorted(where[itype]))}" for itype in spec.instance_types if itype in where
    )
    missing = [itype for itype in spec.instance_types if itype not in where]
    tail = f" (not offered there: {', '.join(missing)})" if missing else ""
    return Check(name, True, f"{offered}{tail}; subnets from {source}")


def check_security_groups(ec2: Any, config: StackConfig) -> Check:
    """Karpenter's EC2NodeClass needs at least one security group its selector finds."""
    ids = list(config.node_pool.karpenter.security_group_ids) if config.node_pool.karpenter else []
    if ids:
        try:
            found = ec2.describe_security_groups(GroupIds=ids)["SecurityGroups"]
        except ClientError as exc:
            if _error_code(exc) != "InvalidGroup.NotFound":
                raise
            return Check(
                "node security groups",
                False,
                str(exc.response["Error"].get("Message")),
                "fix colo:nodePool.karpenter.securityGroupIds",
            )
    else:
        found = ec2.describe_security_groups(Filters=_discovery_filter(config))["SecurityGroups"]
    if not found:
        return Check(
            "node security groups",
            False,
            f"no security group tagged {DISCOVERY_TAG}: {config.cluster.name}",
            f"tag the cluster's node security group {DISCOVERY_TAG}: {config.cluster.name}, or set "
            "colo:nodePool.karpenter.securityGroupIds",
        )
    return Check("node security groups", True, ", ".join(sorted(g["GroupId"] for g in found)))


def check_auto_mode(cluster: dict[str, Any]) -> Check:
    """The cluster runs EKS Auto Mode's compute (DescribeCluster computeConfig.enabled)."""
    if (cluster.get("computeConfig") or {}).get("enabled"):
        return Check("EKS Auto Mode", True, f"{cluster.get('name')} runs Auto Mode compute")
    return Check(
        "EKS Auto Mode",
        False,
        f"{cluster.get('name')} does not run EKS Auto Mode compute (computeConfig.enabled is not true)",
        "enable Auto Mode on the cluster, or use nodePool.mode karpenter or managed",
    )


def capacity_checks(
    config: StackConfig, spec: CapacitySpec, *, ec2: Any, iam: Any, cluster: dict[str, Any] | None
) -> list[Check]:
    """The AWS side of a Karpenter or Auto Mode stack; `cluster` is DescribeCluster's answer, when there is one."""
    checks: list[Check] = []
    if spec.mode == "karpenter":
        checks.append(check_node_role(iam, config))
        checks.append(check_security_groups(ec2, config))
    elif cluster is not None:
        checks.append(check_auto_mode(cluster))
    zones, source = capacity_subnets(ec2, config, cluster)
    checks.append(check_candidates_offered(ec2, spec, zones, source))
    checks += check_instance_gpus_of(ec2, spec.instance_types, spec.gpu, spec.gpus_per_node)
    return checks


def _described_cluster(eks: Any, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if _error_code(exc) == "ResourceNotFoundException":
            return None  # the EKS cluster check says so
        raise
    return found


def aws_capacity_checks(config: StackConfig, spec: CapacitySpec, make: ClientFactory) -> list[Check]:
    """capacity_checks with boto3 clients from `make` (colo.aws.preflight.run_checks passes its own)."""
    cluster = _described_cluster(make("eks"), config.cluster.name)
    return capacity_checks(config, spec, ec2=make("ec2"), iam=make("iam"), cluster=cluster)
