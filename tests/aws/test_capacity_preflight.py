"""`colo preflight` for nodePool.mode karpenter and auto: AWS through moto, the cluster through a stand-in for the
Kubernetes API (the real client reads a real API server in tests/control_plane/test_karpenter.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

import colo.cli.preflight_cmd as preflight_cmd
from colo.aws.capacity_preflight import capacity_checks
from colo.aws.clients import client as aws_client
from colo.cli import main
from colo.cli.common import load_config
from colo.config import parse_stack_config
from colo.kube_preflight import (
    AUTO_NODE_CLASS_CRD,
    EC2_NODE_CLASS_CRD,
    NODE_POOL_CRD,
    ApiObjects,
    Unreachable,
    kube_capacity_checks,
)
from colo.plan.capacity import CapacitySpec, capacity_spec
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack_file
from tests.aws.conftest import REGION
from tests.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "capacity"
KARPENTER_STACK = EXAMPLES / "Pulumi.karpenter.yaml"
AUTO_STACK = EXAMPLES / "Pulumi.auto-mode.yaml"
TRUST_EC2 = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


def build_account(
    *,
    cluster: str = "colo-gpu",
    zones: tuple[str, ...] = ("us-east-1a", "us-east-1b"),
    tagged: bool = True,
    role: str | None = "KarpenterNodeRole-colo-gpu",
    trust: dict[str, Any] = TRUST_EC2,
) -> list[str]:
    """The cluster, its subnets and node security group (tagged for Karpenter's discovery), and the node role."""
    ec2 = aws_client("ec2", REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    tags = [{"ResourceType": "subnet", "Tags": [{"Key": "karpenter.sh/discovery", "Value": cluster}]}]
    subnets = [
        ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.0.{i}.0/24",
            AvailabilityZone=zone,
            **({"TagSpecifications": tags} if tagged else {}),
        )["Subnet"]["SubnetId"]
        for i, zone in enumerate(zones)
    ]
    group = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
    if tagged:
        ec2.create_tags(Resources=[group], Tags=[{"Key": "karpenter.sh/discovery", "Value": cluster}])
    aws_client("eks", REGION).create_cluster(
        name=cluster,
        version="1.34",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": subnets},
    )
    if role is not None:
        aws_client("iam", REGION).create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))
    return subnets


class StandIn:
    """ClusterObjects as a cluster with Karpenter (or Auto Mode) installed answers them."""

    def __init__(
        self, crds: dict[str, dict[str, Any]], node_classes: dict[str, dict[str, Any]] | None = None
    ):
        self.crds = crds
        self.node_classes = node_classes or {}

    def crd(self, name: str) -> dict[str, Any] | None:
        return self.crds.get(name)

    def cluster_object(self, group: str, version: str, plural: str, name: str) -> dict[str, Any] | None:
        assert (group, version, plural) == ("eks.amazonaws.com", "v1", "nodeclasses")
        return self.node_classes.get(name)


def installed(*, served: str = "v1", established: str = "True") -> dict[str, Any]:
    return {
        "spec": {"versions": [{"name": served, "served": True, "storage": True}]},
        "status": {"conditions": [{"type": "Established", "status": established}]},
    }


def karpenter_cluster() -> StandIn:
    return StandIn({NODE_POOL_CRD: installed(), EC2_NODE_CLASS_CRD: installed()})


def spec_of(path: Path) -> CapacitySpec:
    spec = capacity_spec(make_plan(load_config(load_stack_file(path))))
    assert spec is not None
    return spec


def preflight(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cluster: StandIn
) -> tuple[int, str]:
    monkeypatch.setattr(preflight_cmd, "ApiObjects", lambda kubeconfig, context: cluster)
    code = main(["preflight", "--config", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# Self-managed Karpenter


def test_a_ready_account_and_cluster_pass_every_karpenter_check(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build_account()
    code, out = preflight(KARPENTER_STACK, capsys, monkeypatch, karpenter_cluster())
    assert code == 0, out
    assert "✓ Karpenter node role: arn:aws:iam::123456789012:role/KarpenterNodeRole-colo-gpu exists" in out
    assert "✓ node security groups: sg-" in out
    assert "✓ GPU instance types in the nodes' zones: g6e.xlarge in us-east-1a, us-east-1b;" in out
    assert "subnets tagged karpenter.sh/discovery: colo-gpu" in out
    assert "✓ g6e.16xlarge GPUs: 1 x L40S with 45776 MiB each" in out
    assert f"✓ CRD {NODE_POOL_CRD}: installed, serving v1" in out
    assert f"✓ CRD {EC2_NODE_CLASS_CRD}: installed, serving v1" in out
    assert "✗" not in out


def test_a_missing_node_role_fails_naming_the_setting(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build_account(role=None)
    code, out = preflight(KARPENTER_STACK, capsys, monkeypatch, karpenter_cluster())
    assert code == 1
    assert "✗ Karpenter node role: no IAM role named KarpenterNodeRole-colo-gpu" in out
    assert "colo:nodePool.karpenter.nodeRole" in out


def test_a_node_role_ec2_cannot_assume_fails(aws: None) -> None:
    other = {
        **TRUST_EC2,
        "Statement": [{**TRUST_EC2["Statement"][0], "Principal": {"Service": "eks.amazonaws.com"}}],
    }
    build_account(trust=other)
    config = load_config(load_stack_file(KARPENTER_STACK))
    checks = capacity_checks(
        config,
        spec_of(KARPENTER_STACK),
        ec2=aws_client("ec2", REGION),
        iam=aws_client("iam", REGION),
        cluster=None,
    )
    (role,) = [c for c in checks if c.name == "Karpenter node role"]
    assert not role.ok
    assert "does not let ec2.amazonaws.com assume it" in role.detail


def test_untagged_subnets_and_security_groups_fail_with_the_tag_to_add(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build_account(tagged=False)
    code, out = preflight(KARPENTER_STACK, capsys, monkeypatch, karpenter_cluster())
    assert code == 1
    assert "✗ node security groups: no security group tagged karpenter.sh/discovery: colo-gpu" in out
    assert "✗ GPU instance types in the nodes' zones: no subnets found" in out


def test_zones_that_offer_none_of_the_candidates_fail(
    aws: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build_account(zones=("us-east-1e", "us-east-1f"))  # moto's EC2 snapshot: no g6e in either
    code, out = preflight(KARPENTER_STACK, capsys, monkeypatch, karpenter_cluster())
    assert code == 1
    assert "✗ GPU instance types in the nodes' zones: none of g6e.xlarge" in out
    assert "is offered in us-east-1e, us-east-1f" in out


def test_named_subnets_are_the_ones_checked(aws: None) -> None:
    subnets = build_account(tagged=False)
    raw = load_stack_file(KARPENTER_STACK).values
    config = parse_stack_config({**raw, "nodePool": {**raw["nodePool"], "subnetIds": subnets[:1]}})
    spec = capacity_spec(make_plan(config))
    assert spec is not None
    checks = capacity_checks(
        config,
        spec,
        ec2=aws_client("ec2", REGION),
        iam=aws_client("iam", REGION),
        cluster=None,
    )
    (zones,) = [c for c in checks if c.name == "GPU instance types in the nodes' zones"]
    assert zones.ok
    assert "g6e.xlarge in us-east-1a;" in zones.detail
    assert "colo:nodePool.subnetIds" in zones.detail


# The cluster side


def test_missing_or_unserved_crds_fail_with_what_to_install() -> None:
    spec = spec_of(KARPENTER_STACK)
    checks = kube_capacity_checks(spec, lambda: StandIn({NODE_POOL_CRD: installed(served="v1beta1")}))
    assert [(c.name, c.ok) for c in checks] == [
        (f"CRD {NODE_POOL_CRD}", False),
        (f"CRD {EC2_NODE_CLASS_CRD}", False),
    ]
    assert "serves v1beta1, not v1" in checks[0].detail
    assert checks[1].detail == "not installed in the cluster"
    assert "Karpenter" in checks[1].fix


def test_a_crd_not_yet_established_fails() -> None:
    spec = spec_of(KARPENTER_STACK)
    cluster = StandIn({NODE_POOL_CRD: installed(established="False"), EC2_NODE_CLASS_CRD: installed()})
    first, _ = kube_capacity_checks(spec, lambda: cluster)
    assert not first.ok and "not Established" in first.detail


def test_an_unreachable_cluster_is_one_failed_check_saying_how_to_point_at_it() -> None:
    def unreachable() -> StandIn:
        raise Unreachable("no usable kubeconfig (KUBECONFIG or ~/.kube/config): no file")

    (check,) = kube_capacity_checks(spec_of(KARPENTER_STACK), unreachable)
    assert (check.name, check.ok) == ("Kubernetes API", False)
    assert "--kubeconfig" in check.fix


def test_a_real_client_without_a_kubeconfig_is_unreachable(tmp_path: Path) -> None:
    with pytest.raises(Unreachable, match="no usable kubeconfig"):
        ApiObjects(str(tmp_path / "missing"), None)


# EKS Auto Mode


def auto_cluster(size: str | None = None, name: str = "default") -> StandIn:
    spec: dict[str, Any] = {"role": "AmazonEKSAutoNodeRole"}
    if size is not None:
        spec["ephemeralStorage"] = {"size": size}
    return StandIn({NODE_POOL_CRD: installed(), AUTO_NODE_CLASS_CRD: installed()}, {name: {"spec": spec}})


def test_the_built_in_node_class_with_auto_modes_default_disk_passes() -> None:
    spec = spec_of(AUTO_STACK)
    checks = kube_capacity_checks(spec, auto_cluster)
    assert all(c.ok for c in checks), checks
    assert (
        checks[-1].detail
        == f"gives a node 80Gi (Auto Mode's default); the pairs on a node need {spec.disk_gib} GiB"
    )


def test_a_node_class_too_small_for_the_pairs_fails_with_the_size_to_set() -> None:
    spec = spec_of(AUTO_STACK)
    (_, _, node_class) = kube_capacity_checks(spec, lambda: auto_cluster("20Gi"))
    assert not node_class.ok
    assert f"at least {spec.disk_gib}Gi" in node_class.fix


def test_a_node_class_the_cluster_lacks_fails() -> None:
    (_, _, node_class) = kube_capacity_checks(spec_of(AUTO_STACK), lambda: auto_cluster(name="other"))
    assert (node_class.ok, node_class.detail) == (False, "not found in the cluster")


def test_a_cluster_without_auto_mode_compute_fails(aws: None) -> None:
    build_account(cluster="colo-auto", role=None)
    config = load_config(load_stack_file(AUTO_STACK))
    eks = aws_client("eks", REGION)
    described = eks.describe_cluster(name="colo-auto")["cluster"]
    ec2, iam = aws_client("ec2", REGION), aws_client("iam", REGION)
    spec = spec_of(AUTO_STACK)
    without = capacity_checks(config, spec, ec2=ec2, iam=iam, cluster=described)
    assert (without[0].name, without[0].ok) == ("EKS Auto Mode", False)
    with_auto = {**described, "computeConfig": {"enabled": True, "nodePools": ["system"]}}
    checks = capacity_checks(config, spec, ec2=ec2, iam=iam, cluster=with_auto)
    assert all(c.ok for c in checks), checks
    assert "the cluster's subnets" in checks[1].detail  # Auto Mode's built-in NodeClass uses them
