"""`colo verify` inside `pulumi up`: after the pair's Deployment is created (or updated), the engine's output shows
the comparison; a comparison that fails warns and the update stands (colo.components.verify_hook)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from colo.inline_engine import Outcome
from tests.built_tools import PULUMI_ENGINE_SCRIPT, absence, bin_dir_of
from tests.control_plane.api import Api, wait_until
from tests.control_plane.cluster import ControlPlane
from tests.control_plane.engine import EngineOnCluster, edit_stack_file, kubernetes_steps
from tests.control_plane.stacks import nodes_ready, prerequisites, render
from tests.control_plane.test_verify import a100_setup
from tests.engine.conftest import Engine, project_copy

pytestmark = [pytest.mark.control_plane, pytest.mark.engine, pytest.mark.xdist_group("control-plane")]


@dataclass(frozen=True)
class Runs:
    created: Outcome
    updated: Outcome
    destroyed: Outcome


@pytest.fixture(scope="module")
def runs(api: Api, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    assert absence("engine") is None, absence("engine")
    root = tmp_path_factory.mktemp("hooks")
    (root / "home" / "state").mkdir(parents=True)
    engine = EngineOnCluster(
        Engine(bin_dir_of(PULUMI_ENGINE_SCRIPT), root / "home"), control_plane.kubeconfig
    )
    setup = a100_setup(root)
    rendered = render(setup.stack_file, root / "render")
    made = prerequisites(setup, rendered)
    for obj in made:
        api.apply(obj)
    try:
        nodes = [o["metadata"]["name"] for o in made if o["kind"] == "Node"]
        wait_until(lambda: nodes_ready(api, nodes), 60, "the A100 node Ready")
        project = project_copy(root / "project", {"a100": setup.stack_file})
        created = engine.run("up", "a100", project)

        def another_utilization(config: dict[str, Any]) -> None:
            config["colo:pairs"][0]["llm"]["gpuMemoryUtilization"] = 0.85

        edit_stack_file(project / "stacks" / "Pulumi.a100.yaml", another_utilization)
        updated = engine.run("up", "a100", project)
        destroyed = engine.run("destroy", "a100", project)
        yield Runs(created, updated, destroyed)
    finally:
        api.delete_namespaces([m["metadata"]["name"] for m in rendered if m["kind"] == "Namespace"])
        for obj in reversed(made):
            api.delete(obj)


def test_after_the_deployment_is_created_the_engine_shows_the_comparison_within_tolerance(runs: Runs) -> None:
    assert runs.created.succeeded, runs.created.output
    output = runs.created.output
    assert "colo verify: stack a100" in output
    assert "chat-llm (colo/chat-" in output and "chat-llm" in output
    assert "within tolerance: " in output
    assert "PLAN WRONG" not in output and "NOT READ" not in output


def test_a_failed_comparison_after_an_update_warns_and_the_update_stands(runs: Runs) -> None:
    """The servers still log what a 0.9 LLM logs, the plan now says 0.85: verify finds the plan wrong."""
    assert runs.updated.succeeded, runs.updated.output
    changed = [step for step in kubernetes_steps(runs.updated) if step.op != "same"]
    assert [(step.op, step.name) for step in changed] == [("update", "chat")]
    output = runs.updated.output
    assert "colo-verify-chat" in output
    assert "PLAN WRONG" in output
    assert runs.updated.errors == []


def test_no_hook_runs_on_destroy(runs: Runs) -> None:
    assert runs.destroyed.succeeded, runs.destroyed.output
    assert "colo verify" not in runs.destroyed.output
