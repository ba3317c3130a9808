"""`colo verify` inside `pulumi up`: after the pair's Deployment is created (or updated), the engine's output shows
the comparison; a comparison that fails warns and the update stands (colo.components.verify_hook)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.built_tools import PULUMI_ENGINE_SCRIPT, absence, bin_dir_of
from tests.control_plane.api import Api
from tests.control_plane.cluster import ControlPlane
from tests.control_plane.engine import EngineOnCluster, Run, edit_stack_file, kubernetes_steps
from tests.control_plane.stacks import nodes_for_an_engine, render
from tests.control_plane.test_verify import a100_setup
from tests.engine.conftest import Engine, project_copy

pytestmark = [pytest.mark.control_plane, pytest.mark.engine, pytest.mark.xdist_group("control-plane")]


@dataclass(frozen=True)
class Runs:
    created: Run
    updated: Run
    destroyed: Run


@pytest.fixture(scope="module")
def runs(api: Api, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    assert absence("engine") is None, absence("engine")
    root = tmp_path_factory.mktemp("hooks")
    (root / "home" / "state").mkdir(parents=True)
    engine = EngineOnCluster(
        Engine(bin_dir_of(PULUMI_ENGINE_SCRIPT), root / "home"),
        control_plane.kubeconfig,
        control_plane.server,
    )
    setup = a100_setup(root)
    rendered = render(setup.stack_file, root / "render")
    with nodes_for_an_engine(api, setup, rendered):
        project = project_copy(root / "project", {"a100": setup.stack_file})
        engine.aim(project / "stacks" / "Pulumi.a100.yaml")
        created = engine.run("up", "a100", project)

        def another_utilization(config: dict[str, Any]) -> None:
            config["colo:pairs"][0]["llm"]["gpuMemoryUtilization"] = 0.85

        edit_stack_file(project / "stacks" / "Pulumi.a100.yaml", another_utilization)
        updated = engine.run("up", "a100", project)
        destroyed = engine.run("destroy", "a100", project)
        yield Runs(created, updated, destroyed)


def test_after_the_deployment_is_created_the_engine_shows_the_comparison_within_tolerance(runs: Runs) -> None:
    assert runs.created.outcome.succeeded, runs.created.outcome.output
    (report,) = [m for m in runs.created.messages("info") if m.startswith("colo verify: stack a100")]
    assert "chat-embedding (colo/chat-" in report and "chat-llm (colo/chat-" in report
    assert report.count(": within tolerance: ") == 2
    assert not any("colo-verify" in m for m in runs.created.messages("warning"))


def test_a_failed_comparison_after_an_update_warns_and_the_update_stands(runs: Runs) -> None:
    """The servers still log what a 0.9 LLM logs; the plan now says 0.85: verify finds the plan wrong."""
    assert runs.updated.outcome.succeeded, runs.updated.outcome.output
    (deployment,) = [
        s for s in kubernetes_steps(runs.updated.outcome) if s.type == "kubernetes:apps/v1:Deployment"
    ]
    assert (deployment.op, deployment.name) == ("update", "chat")  # its hook is the after-update one
    (warning,) = [m for m in runs.updated.messages("warning") if "colo-verify-chat" in m]
    assert warning.startswith('AfterUpdate hook "colo-verify-chat" failed: colo verify: stack a100')
    assert "chat-llm (colo/chat-" in warning and "PLAN WRONG" in warning
    assert runs.updated.outcome.errors == []


def test_no_hook_runs_on_destroy(runs: Runs) -> None:
    assert runs.destroyed.outcome.succeeded, runs.destroyed.outcome.output
    assert not any("colo verify" in message for message in runs.destroyed.messages("info"))
    assert not any("colo-verify" in message for message in runs.destroyed.messages("warning"))
