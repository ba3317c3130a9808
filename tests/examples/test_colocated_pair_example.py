"""The example program under the mock runtime: colo's pair beside the team's own objects, and a refusal that stops
the program before the pair registers anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from colo.components import ProgramError
from colo.errors import InfeasiblePlanError
from colo.mock_run import RecordingMocks, run_program
from tests.examples.example_project import PAIR_TYPE, TOO_LONG, example_copy, example_stack

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "kubernetes:core/v1:Service"

# The example exports with pulumi.export, whose values the mock runtime keeps nowhere public: the figures it
# exports are read from the pair it made, and the exports themselves under the real engine
# (tests/engine/test_example_program.py).
FIGURES = """
import runpy
from colo.program import export

names = runpy.run_path("__main__.py", run_name="__main__")  # the example, in its project directory
chat = names["chat"]
export("kvTokens", chat.kv_tokens)
export("utilizations", chat.utilizations)
export("predictedUsedMiB", chat.predicted_used_mib)
export("startupProbeSeconds", chat.startup_probe_seconds)
"""


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_the_pair_lands_in_the_teams_namespace_beside_its_own_service(preview: bool) -> None:
    run = run_program(example_stack(), preview=preview)
    namespaces = {
        r.inputs["metadata"]["namespace"] for r in run.mocks.resources if r.type.startswith("kubernetes:")
    }
    assert namespaces == {"team-ml"}
    assert not run.mocks.of_type("kubernetes:core/v1:Namespace")  # the team's exists: none is declared
    (claim,) = run.mocks.of_type("kubernetes:core/v1:PersistentVolumeClaim")
    assert claim.inputs["spec"]["storageClassName"] == "fast-ssd"
    (deployment,) = run.mocks.of_type(DEPLOYMENT)
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"team.example.com/gpu": "l40s"}
    assert (
        next(v for v in pod["volumes"] if v["name"] == "models")["persistentVolumeClaim"]["claimName"]
        == "models"
    )
    services = {s.inputs["metadata"]["name"]: s.inputs["spec"] for s in run.mocks.of_type(SERVICE)}
    assert set(services) == {"chat-api", "chat-llm", "chat-embedding"}
    assert services["chat-api"]["selector"] == services["chat-llm"]["selector"]
    assert services["chat-api"]["ports"][0]["targetPort"] == services["chat-llm"]["ports"][0]["port"]


def test_the_pair_in_the_example_offers_the_plans_figures(tmp_path: Path) -> None:
    program = tmp_path / "figures.py"
    program.write_text(FIGURES)
    outputs = run_program(example_stack(), program=program).outputs
    assert set(outputs["utilizations"]) == {"llm", "embedding"}
    assert sum(outputs["utilizations"].values()) < 1
    assert outputs["kvTokens"]["llm"] >= 32768  # at least one request of the whole context
    assert 0 < outputs["predictedUsedMiB"] < 46068  # an L40S's memory.total
    assert outputs["startupProbeSeconds"]["llm"] > outputs["startupProbeSeconds"]["embedding"]


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_a_pair_that_does_not_fit_stops_the_example_before_the_pair_registers_anything(
    tmp_path: Path, preview: bool
) -> None:
    project = example_copy(tmp_path / "example", maxModelLen=TOO_LONG)
    mocks = RecordingMocks()
    with pytest.raises(ProgramError) as raised:
        run_program(example_stack(project), preview=preview, mocks=mocks)
    assert isinstance(raised.value.error, InfeasiblePlanError)
    assert [p.path for p in raised.value.error.problems] == ["llm.maxModelLen"]
    assert "is greater than the derived max_model_len" in str(raised.value)
    declared = [(r.type, r.name) for r in mocks.resources]
    assert not [name for type_, name in declared if type_ == PAIR_TYPE or name.startswith("chat")]
    # What the program declared before the pair stays declared; nothing after it was reached.
    assert declared == [
        ("colo:index:ModelStore", "models"),
        ("kubernetes:core/v1:PersistentVolumeClaim", "models"),
    ]
