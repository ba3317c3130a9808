"""A changed maxModelLen rolls out with the stack's own strategy; a rolling update with no GPU to spare stalls.

colo's Deployments use Recreate: the new pod needs the GPU the old one holds. The counter-case is the same
change sent as a RollingUpdate (maxSurge 1, maxUnavailable 0) where every GPU is taken: the surge pod finds no
GPU and the Deployment controller reports the rollout stuck. With prod's spare GPU even that rolling update
finds a GPU, which is what the spare is for.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.control_plane.api import Api, wait_until
from tests.control_plane.stacks import STACKS, StackOnCluster, StackSetup, bring_up, remove, render
from tests.control_plane.workloads import available, pair_pods, pending_reason, wait_for_pair_pods

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]

ROLLED_WITHIN = 90.0
CHANGED_PAIR = {"local": "chat", "prod": "qwen27b"}  # both at maxModelLen 32768; the change halves it


def with_max_model_len(setup: StackSetup, directory: Path, pair: str, value: int) -> Path:
    source: dict[str, Any] = yaml.safe_load(setup.stack_file.read_text())
    (entry,) = [p for p in source["config"]["colo:pairs"] if p["name"] == pair]
    entry["llm"]["maxModelLen"] = value
    path = directory / f"Pulumi.{setup.name}.yaml"
    path.write_text(yaml.safe_dump(source, sort_keys=False))
    return path


def llm_args(deployment: dict[str, Any]) -> list[str]:
    (llm,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "llm"]
    return list(llm["args"])


def max_model_len_of(pod: dict[str, Any]) -> str:
    args = llm_args({"spec": {"template": pod}})
    return args[args.index("--max-model-len") + 1]


def rolled_out(api: Api, namespace: str, name: str) -> bool:
    deployment = api.apps.read_namespaced_deployment(name, namespace)
    status = deployment.status
    return bool(
        status.observed_generation == deployment.metadata.generation
        and status.updated_replicas == 1
        and status.available_replicas == 1
        and not status.unavailable_replicas
        and (status.replicas or 0) == 1
    )


@pytest.fixture
def started(
    request: pytest.FixtureRequest, api: Api, prometheus_crds: list[str], tmp_path: Path
) -> Iterator[StackOnCluster]:
    setup = STACKS[request.param]
    stack = bring_up(api, setup, tmp_path / "render")
    try:
        namespace = stack.of_kind("Deployment")[0]["metadata"]["namespace"]
        names = [d["metadata"]["name"] for d in stack.of_kind("Deployment")]
        wait_until(
            lambda: all(available(api, namespace, n) for n in names), ROLLED_WITHIN, "the pairs Available"
        )
        yield stack
    finally:
        remove(api, stack)


def changed_deployment(stack: StackOnCluster, tmp_path: Path, pair: str, value: int) -> dict[str, Any]:
    edited = render(with_max_model_len(stack.setup, tmp_path, pair, value), tmp_path / "edited")
    (deployment,) = [m for m in edited if m["kind"] == "Deployment" and m["metadata"]["name"] == pair]
    return deployment


@pytest.mark.parametrize("started", ["local", "prod"], indirect=True)
def test_a_max_model_len_change_rolls_out_with_the_stacks_strategy(
    api: Api, started: StackOnCluster, tmp_path: Path
) -> None:
    pair = CHANGED_PAIR[started.setup.name]
    namespace = started.of_kind("Deployment")[0]["metadata"]["namespace"]
    before = {
        name: [p["metadata"]["name"] for p in pods] for name, pods in wait_for_pair_pods(api, started).items()
    }
    deployment = changed_deployment(started, tmp_path, pair, 16384)
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}

    applied = api.apply(deployment)

    assert applied.warnings == ()
    wait_until(lambda: rolled_out(api, namespace, pair), ROLLED_WITHIN, f"{pair} to roll out")
    after = wait_for_pair_pods(api, started)
    (pod,) = after[pair]
    assert max_model_len_of(pod) == "16384"
    assert pod["metadata"]["name"] not in before[pair]
    others = {name: [p["metadata"]["name"] for p in pods] for name, pods in after.items() if name != pair}
    assert others == {name: pods for name, pods in before.items() if name != pair}  # no other pair restarted


def as_rolling_update(deployment: dict[str, Any]) -> dict[str, Any]:
    rolling = copy.deepcopy(deployment)
    rolling["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    rolling["spec"]["progressDeadlineSeconds"] = 15  # so the controller says "stuck" within the test
    return rolling


@pytest.mark.parametrize("started", ["local"], indirect=True)
def test_a_rolling_update_with_no_spare_gpu_stalls_with_the_old_pod_serving(
    api: Api, started: StackOnCluster, tmp_path: Path
) -> None:
    pair = CHANGED_PAIR[started.setup.name]
    namespace = started.of_kind("Deployment")[0]["metadata"]["namespace"]
    ((old,),) = wait_for_pair_pods(api, started).values()

    api.apply(as_rolling_update(changed_deployment(started, tmp_path, pair, 16384)))

    def surge_pending() -> str | None:
        pods = pair_pods(api, started)[pair]
        new = [p for p in pods if p["metadata"]["name"] != old["metadata"]["name"]]
        return pending_reason(api, namespace, new[0]["metadata"]["name"]) if new else None

    reason = wait_until(surge_pending, 60, "the surge pod to be left unscheduled")
    assert "Insufficient nvidia.com/gpu.shared" in reason or "anti-affinity" in reason

    def stuck() -> bool:
        conditions = api.apps.read_namespaced_deployment(pair, namespace).status.conditions or []
        return any(c.type == "Progressing" and c.reason == "ProgressDeadlineExceeded" for c in conditions)

    wait_until(stuck, 90, f"{pair} to be reported stuck")
    serving = [p for p in pair_pods(api, started)[pair] if p["metadata"]["name"] == old["metadata"]["name"]]
    assert serving and max_model_len_of(serving[0]) == "32768"  # the old pod still serves
    assert available(api, namespace, pair)


@pytest.mark.parametrize("started", ["prod"], indirect=True)
def test_with_the_spare_gpu_even_a_rolling_update_finds_a_gpu(
    api: Api, started: StackOnCluster, tmp_path: Path
) -> None:
    pair = CHANGED_PAIR[started.setup.name]
    namespace = started.of_kind("Deployment")[0]["metadata"]["namespace"]

    api.apply(as_rolling_update(changed_deployment(started, tmp_path, pair, 16384)))

    wait_until(lambda: rolled_out(api, namespace, pair), ROLLED_WITHIN, f"{pair} to roll out")
    ((pod,),) = [pods for name, pods in wait_for_pair_pods(api, started).items() if name == pair]
    assert max_model_len_of(pod) == "16384"
