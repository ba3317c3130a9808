"""nodePool.mode karpenter and auto: what the plan makes Karpenter (or EKS Auto Mode) launch, and what it refuses."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from colo.config import StackConfig, parse_stack_config
from colo.errors import ConfigError
from colo.plan.capacity import (
    AUTO_MODE_DEFAULT_STORAGE_GIB,
    DO_NOT_DISRUPT,
    CapacitySpec,
    capacity_spec,
    pod_annotations,
)
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack_file
from tests.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "capacity"
SINGLE_L40S = ("g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.16xlarge")


def example_raw(name: str) -> dict[str, Any]:
    return copy.deepcopy(load_stack_file(EXAMPLES / f"Pulumi.{name}.yaml").values)


def config_of(raw: dict[str, Any], **node_pool: Any) -> StackConfig:
    raw = copy.deepcopy(raw)
    raw["nodePool"] = {**raw["nodePool"], **node_pool}
    return parse_stack_config(raw)


def karpenter(**node_pool: Any) -> StackConfig:
    return config_of(example_raw("karpenter"), **node_pool)


def auto(**node_pool: Any) -> StackConfig:
    return config_of(example_raw("auto-mode"), **node_pool)


def with_cluster(config: StackConfig, **cluster: Any) -> StackConfig:
    return config.model_copy(update={"cluster": config.cluster.model_copy(update=cluster)})


def spec_of(config: StackConfig) -> tuple[Plan, CapacitySpec]:
    plan = make_plan(config)
    assert plan.feasible, plan.problems
    spec = capacity_spec(plan)
    assert spec is not None
    return plan, spec


def problems_at(config: StackConfig, path: str) -> list[str]:
    return [p.message for p in make_plan(config).problems if p.path == path]


def requirement(spec: CapacitySpec, key: str) -> list[str]:
    (found,) = [r for r in spec.node_pool_body()["template"]["spec"]["requirements"] if r["key"] == key]
    assert found["operator"] == "In"
    return list(found["values"])


# What Karpenter may launch


def test_karpenter_may_launch_every_catalog_size_that_carries_the_gpu_and_holds_the_pods() -> None:
    _, spec = spec_of(karpenter())
    assert spec.instance_types == SINGLE_L40S
    assert requirement(spec, "node.kubernetes.io/instance-type") == list(SINGLE_L40S)


def test_sizes_too_small_for_the_pods_on_a_node_are_left_out() -> None:
    raw = example_raw("karpenter")
    raw["pairs"][0]["llm"]["cpu"] = "8"  # past the ~7.6 CPUs a g6e.2xlarge can allocate
    _, spec = spec_of(config_of(raw))
    assert spec.instance_types == ("g6e.4xlarge", "g6e.8xlarge", "g6e.16xlarge")


def test_a_named_instance_type_is_the_only_candidate() -> None:
    _, spec = spec_of(karpenter(instanceType="g6e.2xlarge"))
    assert spec.instance_types == ("g6e.2xlarge",)


def test_gpus_per_node_chooses_the_multi_gpu_sizes() -> None:
    raw = example_raw("karpenter")
    raw["storage"]["accessMode"] = "ReadWriteOnce"
    _, spec = spec_of(config_of(raw, gpusPerNode=4))
    assert spec.instance_types == ("g6e.12xlarge", "g6e.24xlarge")
    assert requirement(spec, "karpenter.k8s.aws/instance-gpu-count") == ["4"]


def test_requirements_name_the_gpu_as_karpenter_labels_it() -> None:
    _, spec = spec_of(karpenter())
    # lowerKabobCase of EC2's GpuInfo name; EC2's memory per GPU (colo/catalog/gpus.yaml ec2_memory_mib)
    assert requirement(spec, "karpenter.k8s.aws/instance-gpu-name") == ["l40s"]
    assert requirement(spec, "karpenter.k8s.aws/instance-gpu-memory") == ["45776"]
    assert requirement(spec, "karpenter.k8s.aws/instance-gpu-count") == ["1"]
    assert requirement(spec, "karpenter.sh/capacity-type") == ["on-demand"]


def test_a_gpu_whose_ec2_name_has_blanks_is_labelled_in_kebab_case() -> None:
    raw = example_raw("karpenter")
    raw["nodePool"] = {**raw["nodePool"], "gpu": "RTX-PRO-6000", "instanceType": "g7e.2xlarge"}
    _, spec = spec_of(parse_stack_config(raw))
    assert requirement(spec, "karpenter.k8s.aws/instance-gpu-name") == ["rtx-pro-server-6000"]


def test_auto_mode_requires_the_same_facts_under_its_own_label_domain() -> None:
    _, spec = spec_of(auto())
    assert requirement(spec, "eks.amazonaws.com/instance-gpu-name") == ["l40s"]
    assert requirement(spec, "eks.amazonaws.com/instance-gpu-count") == ["1"]
    assert requirement(spec, "eks.amazonaws.com/instance-gpu-memory") == ["45776"]
    keys = [r["key"] for r in spec.node_pool_body()["template"]["spec"]["requirements"]]
    assert not [key for key in keys if key.startswith("karpenter.k8s.aws/")]


def test_limits_are_the_planned_nodes_with_their_spare_gpu_in_whole_nodes() -> None:
    plan, spec = spec_of(karpenter())  # one pair and one spare GPU on single-GPU nodes
    assert plan.node_count == 2
    assert spec.node_pool_body()["limits"] == {"nvidia.com/gpu": "2", "nodes": "2"}


def test_limits_on_multi_gpu_nodes_cover_the_whole_node() -> None:
    # One pair, no spare, four GPUs a node: Karpenter skips a type whose whole capacity passes the limit.
    raw = example_raw("karpenter")
    _, spec = spec_of(config_of(raw, gpusPerNode=4, spareGpus=0))
    assert spec.node_pool_body()["limits"] == {"nvidia.com/gpu": "4", "nodes": "1"}


def test_max_nodes_raises_the_limits_as_for_the_managed_pool() -> None:
    _, spec = spec_of(karpenter(maxNodes=3))
    assert spec.node_pool_body()["limits"] == {"nvidia.com/gpu": "3", "nodes": "3"}


def test_nodes_carry_the_labels_and_taint_the_pairs_select_and_tolerate() -> None:
    plan, spec = spec_of(karpenter())
    template = spec.node_pool_body()["template"]
    labels = template["metadata"]["labels"]
    assert plan.node_selector.items() <= labels.items()
    assert template["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    toleration = plan.tolerations[0]
    assert (toleration["key"], toleration["effect"]) == ("nvidia.com/gpu", "NoSchedule")


def test_colo_device_plugin_selects_karpenter_nodes_and_none_runs_under_auto_mode() -> None:
    plan, spec = spec_of(karpenter())
    assert plan.device_plugin is not None
    assert plan.device_plugin.node_selector.items() <= spec.labels.items()
    auto_plan, _ = spec_of(auto())
    assert auto_plan.device_plugin is None


# Disruption: nothing moves a pair that loads or serves


def test_only_empty_nodes_are_consolidated_one_at_a_time() -> None:
    _, spec = spec_of(karpenter())
    disruption = spec.node_pool_body()["disruption"]
    assert disruption["consolidationPolicy"] == "WhenEmpty"
    assert disruption["consolidateAfter"] == "1h"
    assert disruption["budgets"] == [{"nodes": "1"}]


def test_karpenter_nodes_never_expire_under_a_pair() -> None:
    _, spec = spec_of(karpenter())
    template = spec.node_pool_body()["template"]["spec"]
    assert template["expireAfter"] == "Never"
    assert "terminationGracePeriod" not in template  # it would let drift evict do-not-disrupt pods


def test_auto_mode_expires_at_its_limit_with_drift_closed() -> None:
    _, spec = spec_of(auto())
    body = spec.node_pool_body()
    assert body["template"]["spec"]["expireAfter"] == "504h"  # Auto Mode's 21-day maximum
    assert body["template"]["spec"]["terminationGracePeriod"] == "24h"
    assert {"nodes": "0", "reasons": ["Drifted"]} in body["disruption"]["budgets"]


def test_pair_pods_carry_do_not_disrupt_only_where_karpenter_runs() -> None:
    assert pod_annotations(karpenter()) == {DO_NOT_DISRUPT: "true"}
    assert pod_annotations(auto()) == {DO_NOT_DISRUPT: "true"}
    existing = karpenter().model_copy(
        update={"node_pool": karpenter().node_pool.model_copy(update={"mode": "existing", "karpenter": None})}
    )
    assert pod_annotations(existing) == {}


# The EC2NodeClass (self-managed Karpenter)


def test_ec2_node_class_boots_the_nvidia_al2023_alias_with_a_sized_gp3_volume_and_imdsv2_one_hop() -> None:
    _, spec = spec_of(karpenter())
    body = spec.ec2_node_class_body()
    assert body is not None
    assert body["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert body["role"] == "KarpenterNodeRole-colo-gpu"
    (volume,) = body["blockDeviceMappings"]
    assert volume["deviceName"] == "/dev/xvda"
    assert volume["ebs"] == {
        "volumeSize": "100Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
    }
    assert body["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert body["metadataOptions"]["httpTokens"] == "required"
    assert spec.node_class_ref == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "colo-gpu"}


def test_subnets_and_security_groups_are_found_by_karpenter_discovery_tag_unless_named() -> None:
    _, found = spec_of(karpenter())
    body = found.ec2_node_class_body()
    assert body is not None
    assert body["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "colo-gpu"}}]
    assert body["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "colo-gpu"}}]
    _, named = spec_of(
        karpenter(
            subnetIds=["subnet-0a1b2c3d4e5f60001"],
            karpenter={
                "securityGroupIds": ["sg-0a1b2c3d4e5f60001"],
                "nodeRole": "gpu-nodes",
                "amiVersion": "v20251120",
            },
        )
    )
    body = named.ec2_node_class_body()
    assert body is not None
    assert body["subnetSelectorTerms"] == [{"id": "subnet-0a1b2c3d4e5f60001"}]
    assert body["securityGroupSelectorTerms"] == [{"id": "sg-0a1b2c3d4e5f60001"}]
    assert body["role"] == "gpu-nodes"
    assert body["amiSelectorTerms"] == [{"alias": "al2023@v20251120"}]


@pytest.mark.parametrize("pairing", ["uuid-handoff", "time-slice", "dra"])
def test_bottlerocket_under_karpenter_has_no_pairing_method_yet(pairing: str) -> None:
    # uuid-handoff: Bottlerocket ignores NVIDIA_VISIBLE_DEVICES; time-slice and dra: Karpenter 1.14.1 cannot
    # launch for them. The EC2NodeClass below is what DRA under a later Karpenter would boot.
    config = with_cluster(karpenter(), node_image="bottlerocket-nvidia", gpu_pairing=pairing)
    assert problems_at(config, "colo:cluster.gpuPairing")


def test_bottlerocket_keeps_its_os_volume_and_sizes_the_data_volume() -> None:
    plan = make_plan(with_cluster(karpenter(), node_image="bottlerocket-nvidia"))
    spec = capacity_spec(replace(plan, problems=()))  # its pairing refusal set aside, as above
    assert spec is not None
    body = spec.ec2_node_class_body()
    assert body is not None
    assert body["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert [(v["deviceName"], v["ebs"]["volumeSize"]) for v in body["blockDeviceMappings"]] == [
        ("/dev/xvda", "4Gi"),
        ("/dev/xvdb", "100Gi"),
    ]


def test_root_volume_gib_wins_over_the_derived_size() -> None:
    _, spec = spec_of(karpenter(rootVolumeGiB=400))
    body = spec.ec2_node_class_body()
    assert body is not None
    assert body["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "400Gi"


# Auto Mode's NodeClass


def test_auto_mode_uses_the_built_in_node_class_when_the_pairs_fit_its_disk() -> None:
    _, spec = spec_of(auto())
    assert spec.disk_gib <= AUTO_MODE_DEFAULT_STORAGE_GIB
    assert spec.node_class_ref == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
    assert spec.ec2_node_class_body() is None


def test_auto_mode_refuses_the_built_in_node_class_for_pairs_it_cannot_hold() -> None:
    config = auto(rootVolumeGiB=200)
    (message,) = problems_at(config, "colo:nodePool.karpenter.nodeClass")
    assert "80 GiB" in message and "ephemeralStorage.size: 200Gi" in message
    _, spec = spec_of(auto(rootVolumeGiB=200, karpenter={"nodeClass": "gpu-200"}))
    assert spec.node_class_ref["name"] == "gpu-200"


def test_auto_mode_refuses_subnet_ids_its_node_class_would_ignore() -> None:
    (message,) = problems_at(auto(subnetIds=["subnet-0a1b2c3d4e5f60001"]), "colo:nodePool.subnetIds")
    assert "NodeClass chooses the subnets" in message


def test_auto_mode_launches_only_families_it_supports() -> None:
    _, spec = spec_of(auto())
    assert all(name.split(".")[0] in {"g6e"} for name in spec.instance_types)


# Pairing methods each mode can run


@pytest.mark.parametrize(
    ("mode", "pairing", "minor", "path", "phrase"),
    [
        ("karpenter", "time-slice", "1.34", "colo:cluster.gpuPairing", "nvidia.com/gpu.shared"),
        ("karpenter", "dra", "1.34", "colo:cluster.gpuPairing", "--ignore-dra-requests"),
        ("auto", "uuid-handoff", "1.36", "colo:cluster.gpuPairing", "NVIDIA_VISIBLE_DEVICES"),
        ("auto", "time-slice", "1.36", "colo:cluster.gpuPairing", "no time-slicing setting"),
        ("auto", "dra", "1.35", "colo:cluster.kubernetesVersion", "from Kubernetes 1.36"),
    ],
)
def test_a_pairing_method_the_mode_cannot_run_is_refused_with_the_reason(
    mode: str, pairing: str, minor: str, path: str, phrase: str
) -> None:
    config = karpenter() if mode == "karpenter" else auto()
    config = with_cluster(config, gpu_pairing=pairing, kubernetes_version=minor)
    assert any(phrase in message for message in problems_at(config, path)), make_plan(config).problems


@pytest.mark.parametrize(("mode", "pairing"), [("karpenter", "uuid-handoff"), ("auto", "dra")])
def test_the_pairing_method_each_mode_runs_plans(mode: str, pairing: str) -> None:
    config = karpenter() if mode == "karpenter" else auto()
    assert config.cluster.gpu_pairing == pairing
    spec_of(config)


def test_karpenter_refuses_node_images_it_has_no_alias_for() -> None:
    config = with_cluster(karpenter(), node_image="gpu-operator-cdi")
    (message,) = problems_at(config, "colo:cluster.nodeImage")
    assert "mode: existing" in message


def test_a_gpu_given_by_memory_alone_is_refused_because_karpenter_chooses_by_ec2_gpu() -> None:
    raw = example_raw("karpenter")
    raw["nodePool"] = {"mode": "karpenter", "gpuMemoryMiB": 40000, "gpuComputeCapability": "8.9"}
    config = parse_stack_config(raw)
    assert any("EC2 reports" in m for m in problems_at(config, "colo:nodePool.gpu"))


def test_no_catalog_type_with_the_gpus_per_node_is_refused_at_gpus_per_node() -> None:
    (message,) = problems_at(karpenter(gpusPerNode=2), "colo:nodePool.gpusPerNode")
    assert "2 L40S GPUs" in message


def test_a_default_node_role_longer_than_iam_allows_must_be_named() -> None:
    config = with_cluster(karpenter(), name="c" * 60)
    assert problems_at(config, "colo:nodePool.karpenter.nodeRole")


def test_managed_and_existing_pools_plan_no_karpenter_objects() -> None:
    existing = parse_stack_config(
        {
            **example_raw("karpenter"),
            "nodePool": {"mode": "existing", "gpu": "L40S", "nodeSelector": {"a": "b"}},
        }
    )
    assert capacity_spec(make_plan(existing)) is None


# The stack keys


def test_karpenter_and_auto_modes_need_the_cluster_name() -> None:
    raw = example_raw("karpenter")
    del raw["cluster"]["name"]
    with pytest.raises(ConfigError, match=r"cluster.name.*nodePool.mode: karpenter"):
        parse_stack_config(raw)


def test_karpenter_settings_are_refused_where_they_would_be_ignored() -> None:
    with pytest.raises(ConfigError, match=r"karpenter\.nodeClass: not read with mode karpenter"):
        karpenter(karpenter={"nodeClass": "gpu"})
    with pytest.raises(ConfigError, match=r"karpenter\.nodeRole: not read with mode auto"):
        auto(karpenter={"nodeRole": "gpu-nodes"})
    with pytest.raises(ConfigError, match="only with mode karpenter or auto"):
        karpenter(mode="existing", karpenter={"amiVersion": "latest"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nodeRole", "arn:aws:iam::123456789012:role/x"),
        ("amiVersion", "2025-11"),
        ("securityGroupIds", ["sg-1"]),
    ],
)
def test_karpenter_settings_are_checked_for_form(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"karpenter.{key}"):
        karpenter(karpenter={key: value})
