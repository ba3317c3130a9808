"""The whole program, every checked-in stack, as `pulumi preview` and as `pulumi up` would run it."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from colo.mock_run import ProgramRun
from tests.paths import REPO_ROOT

COMPONENT_TOKEN = re.compile(r"^colo:[a-z_]+:[A-Z][A-Za-z]+$")


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
def test_every_stack_declares_its_pairs_and_exports_the_plan(
    stack_name: str, preview: bool, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    run = checked_in_run(stack_name, preview)
    deployments = run.mocks.of_type("kubernetes:apps/v1:Deployment")
    plan = run.outputs["plan"]
    assert plan["feasible"]
    assert sorted(d.inputs["metadata"]["name"] for d in deployments) == sorted(
        p["name"] for p in plan["pairs"]
    )
    services = run.mocks.of_type("kubernetes:core/v1:Service")
    assert len(services) == sum(len(p["servers"]) for p in plan["pairs"])


def test_components_use_colo_tokens_and_own_their_children(
    stack_name: str, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    run = checked_in_run(stack_name, False)
    components = [r for r in run.mocks.resources if not r.custom]
    assert components
    for component in components:
        assert COMPONENT_TOKEN.match(component.type), component.type
    for resource in run.mocks.resources:
        if resource.custom and resource.type.startswith("kubernetes:"):
            parent = run.mocks.options_of(resource).parent
            assert "$colo:" in parent or "::colo:" in parent, f"{resource.name} is not inside a component"


def test_every_kubernetes_object_carries_the_standard_labels(
    stack_name: str, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    run = checked_in_run(stack_name, False)
    for resource in run.mocks.resources:
        if resource.custom and resource.type.startswith("kubernetes:"):
            labels = resource.inputs["metadata"]["labels"]
            assert labels["app.kubernetes.io/name"] == "colo"
            assert labels["app.kubernetes.io/managed-by"] == "pulumi"
            assert "app.kubernetes.io/component" in labels


def test_server_namespace_enforces_restricted_pod_security(
    stack_name: str, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    run = checked_in_run(stack_name, False)
    namespace = next(r for r in run.mocks.of_type("kubernetes:core/v1:Namespace") if r.name == "namespace")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_program_started_as_a_plain_script_says_it_needs_the_pulumi_engine() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "__main__.py")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "this is a Pulumi program" in result.stderr
    assert "`pulumi preview` or `pulumi up`" in result.stderr
    assert "colo plan --stack STACK" in result.stderr
    assert "Traceback" not in result.stderr
    assert "colo:pairs" not in result.stderr  # not blamed on a config the engine never handed over
