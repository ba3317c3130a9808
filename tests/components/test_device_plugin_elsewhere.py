"""A pool whose device plugin someone else runs (the GPU Operator, the cluster's own DaemonSet) gets no
second one from colo; time-slicing there needs the user to confirm the slices that plugin offers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from colo.cli.common import load_config
from colo.components.errors import ProgramError
from colo.errors import InfeasiblePlanError
from colo.mock_run import ProgramRun, run_program
from colo.plan.stack import make_plan
from colo.stackfiles import StackFile
from tests.components.stacks import by_name, containers_in_start_order, limits_of, pod_spec, variant

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
PLUGIN_IS_ELSEWHERE = {"devicePlugin": {"managedBy": "elsewhere"}}


def _problems(stack_file: StackFile) -> dict[str, str]:
    plan = make_plan(load_config(stack_file))
    return {problem.path: problem.message for problem in plan.problems}


def test_a_pool_whose_plugin_is_managed_elsewhere_gets_no_second_plugin(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    assert run_variant(variant("prod")).mocks.of_type(DAEMON_SET), "colo installs one by default"
    run = run_variant(variant("prod", nodePool=PLUGIN_IS_ELSEWHERE))
    assert run.mocks.of_type(DAEMON_SET) == []
    namespaces = [r.inputs["metadata"]["name"] for r in run.mocks.of_type("kubernetes:core/v1:Namespace")]
    assert namespaces == ["colo"]


@pytest.mark.parametrize(
    "stack_file",
    [
        variant("local", nodePool=PLUGIN_IS_ELSEWHERE),
        variant("local", cluster={"nodeImage": "gpu-operator-cdi"}),
    ],
    ids=["managed-by-elsewhere", "gpu-operator-node-image"],
)
def test_time_slice_on_a_plugin_managed_elsewhere_is_refused_until_its_replicas_are_confirmed(
    stack_file: StackFile,
) -> None:
    with pytest.raises(ProgramError) as raised:
        run_program(stack_file)
    assert isinstance(raised.value.error, InfeasiblePlanError)
    message = _problems(stack_file)["colo:nodePool.devicePlugin.sharedReplicas"]
    assert "managed elsewhere" in message
    assert "confirm it with sharedReplicas: 2" in message


@pytest.mark.parametrize(("replicas", "effect"), [(3, "another pod can take"), (1, "cannot hold every")])
def test_confirmed_replicas_other_than_the_pairs_need_are_refused(replicas: int, effect: str) -> None:
    confirmed = {"devicePlugin": {"managedBy": "elsewhere", "sharedReplicas": replicas}}
    message = _problems(variant("local", nodePool=confirmed))["colo:nodePool.devicePlugin.sharedReplicas"]
    assert "needs exactly 2 slices per GPU" in message
    assert effect in message


def test_confirmed_replicas_time_slice_on_the_existing_plugin_without_adding_one(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    confirmed = {"devicePlugin": {"managedBy": "elsewhere", "sharedReplicas": 2}}
    run = run_variant(variant("local", nodePool=confirmed))
    assert run.mocks.of_type(DAEMON_SET) == []
    (deployment,) = run.mocks.of_type("kubernetes:apps/v1:Deployment")
    servers = by_name(containers_in_start_order(pod_spec(deployment.inputs)))
    assert limits_of(servers["llm"]) == {"memory": "20Gi", "nvidia.com/gpu.shared": "1"}


def test_shared_replicas_where_colo_runs_the_plugin_is_refused() -> None:
    stack_file = variant("local", nodePool={"devicePlugin": {"sharedReplicas": 2}})
    assert "Remove it" in _problems(stack_file)["colo:nodePool.devicePlugin.sharedReplicas"]


def test_dra_on_a_pool_that_runs_a_device_plugin_is_refused() -> None:
    message = _problems(variant("dev", nodePool=PLUGIN_IS_ELSEWHERE))["colo:nodePool.devicePlugin.managedBy"]
    assert "cannot run on nodes that also run the device plugin" in message
