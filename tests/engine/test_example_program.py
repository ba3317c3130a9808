"""The example program (a __main__.py of one's own using colo's pair) under the real Pulumi engine and Kubernetes
provider, rendering to a directory: the objects it writes are the ones the mock runtime records, and a pair
that does not fit fails the preview with colo's message and leaves nothing of the pair in the stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from colo.diff.objects import Manifest
from colo.mock_run import run_program
from colo.render import write_render
from tests.engine.conftest import Deployed, Engine, preview_then_up
from tests.engine.objects import fields_that_differ, objects_in
from tests.examples.example_project import PAIR_TYPE, STACK, TOO_LONG, example_copy, example_stack

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]


@pytest.fixture(scope="module")
def deployed(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    root = tmp_path_factory.mktemp("engine-example")
    project = example_copy(root / "project")
    return preview_then_up(engine, STACK, project, root / "rendered", program=project / "__main__.py")


@pytest.fixture(scope="module")
def mocked_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Manifest]:
    out = tmp_path_factory.mktemp("mock-render-example")
    write_render(run_program(example_stack()), STACK, out)
    return objects_in(out)


def test_preview_plans_the_pair_and_the_teams_objects_and_writes_nothing(deployed: Deployed) -> None:
    assert deployed.preview.succeeded, deployed.preview.output
    created = {step.name for step in deployed.preview.steps if step.op == "create"}
    assert {"chat", "chat-llm", "chat-embedding", "chat-api", "models", "chat-scripts"} <= created
    assert any(step.type == PAIR_TYPE for step in deployed.preview.steps)
    assert deployed.files_after_preview == []


def test_up_writes_what_the_mock_runtime_records_field_for_field(
    deployed: Deployed, mocked_objects: dict[str, Manifest]
) -> None:
    assert deployed.up.succeeded, deployed.up.output
    written = objects_in(deployed.rendered)
    assert sorted(written) == sorted(mocked_objects)
    differing = {key: fields_that_differ(ours, written[key]) for key, ours in mocked_objects.items()}
    assert {key: paths for key, paths in differing.items() if paths} == {}
    assert "Service/team-ml/chat-api" in written


def test_up_shows_what_the_example_exports(deployed: Deployed) -> None:
    outputs = deployed.up.outputs
    assert outputs["endpoint"] == "http://chat-api.team-ml.svc/v1"
    assert set(outputs["utilizations"]) == {"llm", "embedding"}
    assert sum(outputs["utilizations"].values()) < 1
    assert outputs["llmKvTokens"] >= 32768  # at least one request of the whole context
    assert 0 < outputs["predictedUsedMiB"] < 46068  # an L40S's memory.total
    assert outputs["startupProbeSeconds"]["llm"] > outputs["startupProbeSeconds"]["embedding"]


def test_a_pair_that_does_not_fit_fails_the_preview_with_colos_message_before_registering(
    engine: Engine, tmp_path: Path
) -> None:
    project = example_copy(tmp_path / "project", maxModelLen=TOO_LONG)

    preview = engine.run("preview", STACK, project, tmp_path / "rendered", program=project / "__main__.py")

    assert not preview.succeeded
    message = "\n".join(preview.errors)
    assert "ColocatedPair chat: the plan is refused; nothing was deployed:" in message
    assert "llm.maxModelLen: ValueError: User-specified max_model_len (65536)" in message
    assert "Traceback" not in message
    assert not [step for step in preview.steps if step.type == PAIR_TYPE or step.name.startswith("chat")]
