"""nodePool.mode karpenter and auto under Pulumi's mocks: the example stacks as the program declares them, and
KarpenterNodePool declared alone. Every NodePool and EC2NodeClass is checked against Karpenter's own CRD schema."""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache
from typing import Any

import pulumi
import pytest

from colo.cli.common import load_config
from colo.components.errors import ProgramError
from colo.components.karpenter import TYPE, KarpenterNodePool, KarpenterNodePoolArgs
from colo.config import StackConfig
from colo.mock_run import ProgramRun
from colo.plan.capacity import DO_NOT_DISRUPT
from colo.stackfiles import StackFile, load_stack_file
from tests.components.conftest import AwsMocks, run_under_mocks
from tests.components.crd_schemas import assert_valid_custom_resource
from tests.components.stacks import DEPLOYMENT, pod_spec
from tests.harness import run_program
from tests.paths import REPO_ROOT

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
EXAMPLES = REPO_ROOT / "examples" / "capacity"
MODES = {"karpenter": "Pulumi.karpenter.yaml", "auto": "Pulumi.auto-mode.yaml"}


def example(mode: str) -> StackFile:
    return load_stack_file(EXAMPLES / MODES[mode])


@cache
def program_run(mode: str) -> ProgramRun:
    return run_program(example(mode), mocks=AwsMocks())


def only(run: ProgramRun, type_: str) -> dict[str, Any]:
    (found,) = run.mocks.of_type(type_)
    return found.inputs


@pytest.mark.parametrize("mode", list(MODES))
def test_every_karpenter_object_the_program_declares_passes_karpenters_crd_schema(mode: str) -> None:
    run = program_run(mode)
    declared = [r for r in run.mocks.resources if r.type in (NODE_POOL, EC2_NODE_CLASS)]
    assert declared
    for resource in declared:
        assert_valid_custom_resource(resource.inputs)


def test_karpenter_mode_declares_a_node_pool_on_colos_ec2_node_class_and_nothing_on_aws() -> None:
    run = program_run("karpenter")
    pool, node_class = only(run, NODE_POOL), only(run, EC2_NODE_CLASS)
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": node_class["metadata"]["name"],
    }
    assert node_class["spec"]["role"] == "KarpenterNodeRole-colo-gpu"
    assert [r.type for r in run.mocks.resources if r.type.startswith("aws:")] == []


def test_auto_mode_declares_only_a_node_pool_on_the_auto_mode_node_class() -> None:
    run = program_run("auto")
    pool = only(run, NODE_POOL)
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "eks.amazonaws.com",
        "kind": "NodeClass",
        "name": "default",
    }
    assert run.mocks.of_type(EC2_NODE_CLASS) == []
    assert run.mocks.of_type(DAEMON_SET) == []  # Auto Mode runs NVIDIA's device plugin itself


@pytest.mark.parametrize("mode", list(MODES))
def test_pair_pods_select_the_node_pools_labels_tolerate_its_taint_and_forbid_disruption(mode: str) -> None:
    run = program_run(mode)
    template = only(run, NODE_POOL)["spec"]["template"]
    (deployment,) = run.mocks.of_type(DEPLOYMENT)
    pod = pod_spec(deployment.inputs)
    assert pod["nodeSelector"].items() <= template["metadata"]["labels"].items()
    (taint,) = template["spec"]["taints"]
    assert {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]} in pod["tolerations"]
    annotations = deployment.inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations[DO_NOT_DISRUPT] == "true"


def test_colos_device_plugin_runs_on_the_nodes_karpenter_launches() -> None:
    run = program_run("karpenter")
    labels = only(run, NODE_POOL)["spec"]["template"]["metadata"]["labels"]
    (plugin,) = run.mocks.of_type(DAEMON_SET)
    assert plugin.inputs["spec"]["template"]["spec"]["nodeSelector"].items() <= labels.items()


def test_the_node_pool_and_its_node_class_belong_to_the_component() -> None:
    run = program_run("karpenter")
    (pool,) = run.mocks.of_type(NODE_POOL)
    (node_class,) = run.mocks.of_type(EC2_NODE_CLASS)
    (component,) = [r for r in run.mocks.resources if r.type == TYPE]
    for child in (pool, node_class):
        assert run.mocks.options_of(child).parent.endswith(f"{TYPE}::{component.name}")


def _config(mode: str) -> StackConfig:
    return load_config(example(mode))


def test_a_node_pool_declared_alone_reports_its_name_and_labels() -> None:
    config = _config("karpenter")

    def build() -> dict[str, pulumi.Input[Any]]:
        pool = KarpenterNodePool("gpus", KarpenterNodePoolArgs.of_stack(config))
        return {"name": pool.node_pool_name, "labels": pool.node_labels}

    mocks, outputs = run_under_mocks(build)
    assert outputs == {
        "name": "colo-gpu",
        "labels": {"colo.dev/gpu-pool": "colo-gpu", "nvidia.com/gpu.present": "true"},
    }
    assert len(mocks.of_type(NODE_POOL)) == 1


def test_a_stack_karpenter_cannot_serve_is_refused_before_anything_is_registered() -> None:
    config = _config("karpenter")
    config = config.model_copy(
        update={"cluster": config.cluster.model_copy(update={"gpu_pairing": "time-slice"})}
    )
    mocks = AwsMocks()

    def build() -> dict[str, pulumi.Input[Any]]:
        KarpenterNodePool("gpus", KarpenterNodePoolArgs.of_stack(config))
        return {}

    with pytest.raises(ProgramError, match=r"KarpenterNodePool gpus: .*\n  - cluster.gpuPairing: time-slice"):
        run_under_mocks(build, mocks=mocks)
    assert mocks.resources == []


def test_a_managed_pool_given_to_the_component_is_refused_naming_the_mode() -> None:
    config = _config("karpenter")
    raw = copy.deepcopy(config.node_pool.model_dump(by_alias=True, exclude_unset=True))
    raw.update({"mode": "existing", "nodeSelector": {"a": "b"}})
    raw.pop("karpenter", None)
    pool = type(config.node_pool).model_validate(raw)
    args = replace(KarpenterNodePoolArgs.of_stack(config), node_pool=pool)

    def build() -> dict[str, pulumi.Input[Any]]:
        KarpenterNodePool("gpus", args)
        return {}

    with pytest.raises(
        ProgramError, match=r"nodePool.mode: is existing; KarpenterNodePool needs karpenter or auto"
    ):
        run_under_mocks(build)
