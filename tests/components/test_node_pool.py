from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from colo.components import GpuNodePool, GpuNodePoolArgs, NodePool, ProgramError
from colo.components.node_pool import NODE_POLICIES
from colo.config import StackConfig
from colo.plan.stack import Plan, make_plan
from tests.components.conftest import AwsMocks, declare_under_mocks, stack_config
from tests.harness import Recorded, default_invokes, run_program

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def pool_of(config: StackConfig) -> Callable[[], GpuNodePool]:
    return lambda: GpuNodePool(config.cluster.name, GpuNodePoolArgs.of_stack(config))


def only(mocks: AwsMocks, type_: str) -> Recorded:
    found = mocks.of_type(type_)
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def test_node_role_trusts_ec2_and_holds_only_the_node_policies(prod_config: StackConfig) -> None:
    mocks, _ = declare_under_mocks(pool_of(prod_config))
    role = only(mocks, "aws:iam/role:Role")
    assert '"Service": "ec2.amazonaws.com"' in role.inputs["assumeRolePolicy"]
    attached = sorted(
        r.inputs["policyArn"] for r in mocks.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    )
    assert attached == sorted(NODE_POLICIES.values())
    assert not mocks.of_type("aws:iam/rolePolicy:RolePolicy")  # no inline grants beyond the managed three


def test_launch_template_requires_imdsv2_and_keeps_pods_off_the_node_role(prod_config: StackConfig) -> None:
    mocks, _ = declare_under_mocks(pool_of(prod_config))
    metadata = only(mocks, LAUNCH_TEMPLATE).inputs["metadataOptions"]
    assert metadata["httpTokens"] == "required"
    assert metadata["httpPutResponseHopLimit"] == 1


def test_launch_template_sizes_a_gp3_image_volume_from_the_plan(prod_config: StackConfig) -> None:
    mocks, _ = declare_under_mocks(pool_of(prod_config))
    (mapping,) = only(mocks, LAUNCH_TEMPLATE).inputs["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/xvda"
    assert mapping["ebs"]["volumeType"] == "gp3"
    # three pairs' images and ~70 GiB of weights on one node: well past EKS's 20 GiB default
    assert mapping["ebs"]["volumeSize"] >= 150
    assert only(mocks, NODE_GROUP).inputs.get("diskSize") is None  # EKS rejects diskSize beside a template


def test_configured_root_volume_wins_over_the_derived_size() -> None:
    config = stack_config("prod", root_volume_gib=400)
    mocks, _ = declare_under_mocks(pool_of(config))
    (mapping,) = only(mocks, LAUNCH_TEMPLATE).inputs["blockDeviceMappings"]
    assert mapping["ebs"]["volumeSize"] == 400


def test_bottlerocket_sizes_its_data_volume_and_uses_the_nvidia_bottlerocket_ami() -> None:
    config = stack_config("dev")
    config = config.model_copy(
        update={"cluster": config.cluster.model_copy(update={"node_image": "bottlerocket-nvidia"})}
    )
    mocks, _ = declare_under_mocks(pool_of(config))
    (mapping,) = only(mocks, LAUNCH_TEMPLATE).inputs["blockDeviceMappings"]
    assert mapping["deviceName"] == "/dev/xvdb"
    assert only(mocks, NODE_GROUP).inputs["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


def test_node_group_joins_the_existing_cluster_with_the_planned_nodes(
    prod_config: StackConfig, prod_plan: Plan
) -> None:
    mocks, outputs = declare_under_mocks(pool_of(prod_config))
    group = only(mocks, NODE_GROUP).inputs
    assert group["clusterName"] == "colo-prod"
    assert group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group["instanceTypes"] == ["g6e.12xlarge"]
    assert group["subnetIds"] == ["subnet-0f1e2d3c4b5a60001", "subnet-0f1e2d3c4b5a60002"]
    assert prod_plan.node_count == 1
    assert group["scalingConfig"] == {"desiredSize": 1, "minSize": 1, "maxSize": 1}
    assert group["updateConfig"] == {"maxUnavailable": 1}
    assert group["launchTemplate"]["version"] == "1"
    assert outputs["nodeGroupName"]


def test_node_group_carries_the_labels_pods_and_the_device_plugin_select(prod_config: StackConfig) -> None:
    mocks, _ = declare_under_mocks(pool_of(prod_config))
    group = only(mocks, NODE_GROUP).inputs
    assert group["labels"] == {"colo.dev/gpu-pool": "colo-prod", "nvidia.com/gpu.present": "true"}
    assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_desired_size_follows_the_plan_when_pairs_need_more_nodes() -> None:
    config = stack_config("prod", instance_type="g6e.xlarge", spare_gpus=0, max_nodes=5)
    # Pairs on three nodes share the model volume only through a ReadWriteMany class.
    config = config.model_copy(
        update={"storage": config.storage.model_copy(update={"access_mode": "ReadWriteMany"})}
    )
    assert make_plan(config).node_count == 3
    mocks, _ = declare_under_mocks(pool_of(config))
    assert only(mocks, NODE_GROUP).inputs["scalingConfig"] == {"desiredSize": 3, "minSize": 3, "maxSize": 5}


def test_a_stack_on_existing_nodes_adds_nothing_to_aws() -> None:
    run = run_program("local", mocks=AwsMocks())
    assert [r.type for r in run.mocks.resources if r.type.startswith("aws:")] == []


def test_a_node_image_eks_cannot_launch_is_refused_before_anything_is_registered() -> None:
    config = stack_config("dev")
    config = config.model_copy(
        update={"cluster": config.cluster.model_copy(update={"node_image": "gpu-operator-cdi"})}
    )
    mocks = AwsMocks()
    with pytest.raises(
        ProgramError, match=r"GpuNodePool colo-dev: .*\n  - cluster.nodeImage: .*mode: existing"
    ):
        declare_under_mocks(pool_of(config), mocks=mocks)
    assert mocks.resources == []


def _ec2_reports(**gpu_fields: Any) -> AwsMocks:
    def invokes(token: str, args: dict[str, Any]) -> dict[str, Any]:
        answer = default_invokes(token, args)
        if token == "aws:ec2/getInstanceType:getInstanceType":
            answer["gpuses"] = [{**answer["gpuses"][0], **gpu_fields}]
        return answer

    return AwsMocks(invokes)


@pytest.mark.parametrize("preview", [False, True])
def test_gpu_memory_that_disagrees_with_the_catalog_fails_the_run(
    prod_config: StackConfig, preview: bool
) -> None:
    with pytest.raises(Exception, match=r"(?s)GpuNodePool colo-prod: .*nodePool.gpu: .*22888 MiB.*45776 MiB"):
        declare_under_mocks(
            pool_of(prod_config),
            mocks=_ec2_reports(memorySize=22888),
            preview=preview,
        )


def test_a_different_gpu_model_fails_the_run_naming_the_gpu_setting(prod_config: StackConfig) -> None:
    with pytest.raises(
        Exception, match=r"(?s)nodePool.gpu: .*carries H100 GPUs according to EC2.*computed for L40S"
    ):
        declare_under_mocks(pool_of(prod_config), mocks=_ec2_reports(name="H100"))


def test_a_pool_whose_pairs_do_not_fit_is_refused_before_anything_is_registered() -> None:
    config = stack_config("prod")
    pair = config.pairs[0].model_copy(
        update={"llm": config.pairs[0].llm.model_copy(update={"max_model_len": 4_000_000})}
    )
    pairs = [pair, *config.pairs[1:]]
    args = GpuNodePoolArgs.of_stack(config)
    mocks = AwsMocks()
    with pytest.raises(ProgramError) as raised:
        declare_under_mocks(
            lambda: GpuNodePool(
                "gpu",
                GpuNodePoolArgs(args.cluster_name, args.subnet_ids, pairs, args.cluster, args.node_pool),
            ),
            mocks=mocks,
        )
    assert [p.path for p in raised.value.error.problems] == ["pairs[0].llm.maxModelLen"]
    assert mocks.resources == []


def test_a_pool_of_its_own_joins_the_cluster_and_subnets_other_resources_name() -> None:
    """Usable alone: the cluster name and subnets may be outputs; the pool's size comes from its pairs."""
    config = stack_config("prod")
    mocks, _ = declare_under_mocks(
        lambda: GpuNodePool(
            "gpu",
            GpuNodePoolArgs(
                cluster_name=pulumi.Output.from_input("team-eks"),
                subnet_ids=pulumi.Output.from_input(["subnet-0123456789abcdef0"]),
                pairs=config.pairs[:1],
                node_pool=NodePool(gpu="L40S", instance_type="g6e.xlarge"),
            ),
        )
    )
    group = only(mocks, NODE_GROUP).inputs
    assert group["clusterName"] == "team-eks"
    assert group["subnetIds"] == ["subnet-0123456789abcdef0"]
    assert group["scalingConfig"] == {"desiredSize": 1, "minSize": 1, "maxSize": 1}
    assert group["labels"] == {"colo.dev/gpu-pool": "colo", "nvidia.com/gpu.present": "true"}


def test_a_gpu_count_that_disagrees_with_the_placement_fails_the_run(prod_config: StackConfig) -> None:
    with pytest.raises(Exception, match=r"nodePool.instanceType: .*has 8 GPUs.*assumed 4"):
        declare_under_mocks(pool_of(prod_config), mocks=_ec2_reports(count=8))


def test_no_node_group_is_declared_with_an_unverified_instance_type(prod_config: StackConfig) -> None:
    mocks = _ec2_reports(memorySize=1)
    with pytest.raises(Exception, match=r"nodePool\.gpu: "):
        declare_under_mocks(pool_of(prod_config), mocks=mocks)
    assert mocks.of_type(NODE_GROUP) == []
