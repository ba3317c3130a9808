from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from moto import mock_aws

from colo.aws.clients import client as aws_client
from colo.aws.preflight import check_instance_gpus
from colo.catalog import gpu
from colo.cli import main
from colo.stackfiles import load_stack
from tests.aws.conftest import BUCKET, REGION, put_model, tiny_model_files

WEIGHTS = f"s3://{BUCKET}/qwen27b/"


def build_aws(zones: tuple[str, ...] = ("us-east-1a", "us-east-1b"), version: str = "1.33") -> list[str]:
    """An EKS cluster for the prod stack, subnets in `zones`, and the model its first LLM syncs from."""
    ec2 = aws_client("ec2", REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate(zones)
    ]
    aws_client("eks", REGION).create_cluster(
        name="colo-prod",
        version=version,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": subnets},
    )
    s3 = aws_client("s3", REGION)
    s3.create_bucket(Bucket=BUCKET)
    put_model(s3, "qwen27b/", tiny_model_files())
    return subnets


def write_stack(tmp_path: Path, subnets: list[str], weights_uri: str = WEIGHTS, **cluster: Any) -> Path:
    stack = load_stack("prod")
    values = dict(stack.values)
    values["nodePool"] = {**values["nodePool"], "subnetIds": subnets}
    values["cluster"] = {**values["cluster"], **cluster}
    first = dict(values["pairs"][0])
    first["llm"] = {**first["llm"], "weightsUri": weights_uri}
    values["pairs"] = [first, *values["pairs"][1:]]
    values["storage"] = {**values.get("storage", {}), "syncImage": "registry.example/colo-sync:0.1.0"}
    config = {
        **stack.others,
        **{
            f"colo:{k}": v
            for k, v in values.items()
            if k in ("cluster", "nodePool", "storage", "budget", "pairs")
        },
    }
    path = tmp_path / "Pulumi.preflight.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


@pytest.fixture
def aws(aws_env: None) -> Iterator[None]:
    with mock_aws():
        yield


def preflight(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["preflight", "--config", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_all_checks_pass_for_a_ready_account(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = preflight(write_stack(tmp_path, build_aws()), capsys)
    assert code == 0, out
    assert "✓ EKS cluster: colo-prod exists (Kubernetes 1.33" in out
    assert "✓ g6e.12xlarge in the subnets' zones: offered in us-east-1a, us-east-1b" in out
    assert "✓ g6e.12xlarge GPUs: 4 x L40S with 45776 MiB each" in out
    assert f"✓ colo:pairs[0].llm.weightsUri: {WEIGHTS} holds config.json" in out
    assert "✗" not in out


def test_a_missing_cluster_fails_naming_the_setting(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = preflight(write_stack(tmp_path, build_aws(), name="colo-typo"), capsys)
    assert code == 1
    assert "✗ EKS cluster: no cluster named colo-typo in us-east-1" in out
    assert "fix: set colo:cluster.name" in out


def test_a_cluster_too_old_for_dra_fails_with_the_platform_rule(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_stack(tmp_path, build_aws(version="1.33"), gpuPairing="dra", kubernetesVersion="1.34")
    code, out = preflight(path, capsys)
    assert code == 1
    assert "✗ Kubernetes version: the cluster runs 1.33, the stack declares 1.34" in out
    assert "✗ gpuPairing dra on 1.33: gpuPairing dra needs resource.k8s.io/v1" in out


def test_an_instance_type_not_offered_in_a_subnets_zone_fails(
    aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subnets = build_aws(zones=("us-east-1a", "us-east-1f"))
    code, out = preflight(write_stack(tmp_path, subnets), capsys)
    assert code == 1
    assert f"✗ g6e.12xlarge in the subnets' zones: not offered for {subnets[1]} (us-east-1f)" in out
    assert "colo:nodePool.subnetIds" in out


def test_gpu_memory_that_differs_from_the_catalog_fails(aws: None) -> None:
    from colo.cli.common import load_config

    config = load_config(load_stack("prod"))
    pool = config.node_pool.model_copy(update={"instance_type": "p4de.24xlarge", "gpu": "A100-40GB"})
    config = config.model_copy(update={"node_pool": pool})
    ec2 = aws_client("ec2", REGION)
    (check,) = check_instance_gpus(ec2, config, gpu("A100-40GB"), 8)
    assert not check.ok
    assert "81920 MiB according to EC2" in check.detail
    assert "40960 MiB" in check.detail
    assert check.fix == "fix colo:nodePool.gpu"


def test_a_missing_model_prefix_fails(aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_stack(tmp_path, build_aws(), weights_uri=f"s3://{BUCKET}/not-uploaded/")
    code, out = preflight(path, capsys)
    assert code == 1
    assert (
        f"✗ colo:pairs[0].llm.weightsUri: s3://{BUCKET}/not-uploaded/: no objects under that prefix in bucket "
        f"{BUCKET}" in out
    )


def test_an_invalid_config_exits_2(aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": {"colo:pairs": []}}))
    code, out = preflight(path, capsys)
    assert code == 2
    assert "colo:pairs" in out
