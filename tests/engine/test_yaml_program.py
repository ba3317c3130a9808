"""colo's pair from another language than Python: the Pulumi YAML example (examples/colocated-pair-yaml) under
the real CLI, its YAML language host and Kubernetes provider, with colo's component provider
(pulumi-resource-colo) constructing the pair. Its objects are those the Python component declares for the same
inputs; a pair that does not fit fails the preview with colo's message and leaves nothing of the pair."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.components.multi_language import ColocatedPair, ColocatedPairInputs
from colo.diff.objects import Manifest, object_key
from colo.render import is_kubernetes_object, kubernetes_object
from tests.built_tools import PULUMI_YAML_SCRIPT, bin_dir_of
from tests.components.conftest import run_under_mocks
from tests.engine.conftest import Engine
from tests.engine.objects import fields_that_differ, objects_in
from tests.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.pulumi_yaml, pytest.mark.xdist_group("engine")]

EXAMPLE = REPO_ROOT / "examples" / "colocated-pair-yaml"
# The pair as the example declares it, with its claim's name resolved.
INPUTS: ColocatedPairInputs = {
    "llm": {"model": "Qwen/Qwen3-8B-FP8", "max_model_len": 32768, "vllm": {"version": "0.19.1"}},
    "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": {"version": "0.19.1"}},
    "namespace": "team-ml",
    "model_claim": "models",
    "gpu": "L40S",
    "instance_type": "g6e.xlarge",
    "gpu_pairing": "uuid-handoff",
    "kubernetes_version": "1.34",
    "node_selector": {"team.example.com/gpu": "l40s"},
}


def pulumi(engine: Engine, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = engine.environment()
    # The YAML host, and pulumi-resource-colo beside this interpreter (the package's entry point).
    env["PATH"] = os.pathsep.join(
        [str(bin_dir_of(PULUMI_YAML_SCRIPT)), str(Path(sys.executable).parent), env["PATH"]]
    )
    return subprocess.run(
        ["pulumi", *args, "--cwd", str(project), "--non-interactive"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def yaml_project(engine: Engine, destination: Path, render_dir: Path, **config: str) -> Path:
    destination.mkdir(parents=True)
    shutil.copy(EXAMPLE / "Pulumi.yaml", destination / "Pulumi.yaml")
    stack = f"yaml-{destination.parent.name}"
    assert pulumi(engine, destination, "stack", "init", stack).returncode == 0
    settings = {"kubernetes:renderYamlToDirectory": str(render_dir), **config}
    for key, value in settings.items():
        assert pulumi(engine, destination, "config", "set", key, value).returncode == 0
    return destination


def python_objects() -> dict[str, Manifest]:
    """The pair's objects as the Python component declares them for the same inputs, under the mock runtime."""
    mocks, _ = run_under_mocks(lambda: {"urn": ColocatedPair("chat", INPUTS).urn})
    found = [kubernetes_object(r).body for r in mocks.resources if is_kubernetes_object(r)]
    return {object_key(body): body for body in found}


@pytest.fixture(scope="module")
def rendered(
    engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path_factory.mktemp("yaml-up")
    render_dir = root / "rendered"
    project = yaml_project(engine, root / "project", render_dir)
    return pulumi(engine, project, "up", "--yes", "--skip-preview"), render_dir


def test_up_renders_the_pair_as_the_python_component_declares_it_beside_the_teams_objects(
    rendered: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    up, render_dir = rendered
    assert up.returncode == 0, up.stdout + up.stderr
    written = objects_in(render_dir)
    ours = python_objects()
    assert set(ours) <= set(written)
    differing = {key: fields_that_differ(body, written[key]) for key, body in ours.items()}
    assert {key: paths for key, paths in differing.items() if paths} == {}
    assert sorted(set(written) - set(ours)) == [
        "PersistentVolumeClaim/team-ml/models",
        "Service/team-ml/chat-api",
    ]
    api: dict[str, Any] = written["Service/team-ml/chat-api"]["spec"]
    assert api["selector"] == written["Service/team-ml/chat-llm"]["spec"]["selector"]
    assert api["ports"][0]["targetPort"] == 8000
    assert "llmKvTokens" in up.stdout


def test_a_pair_that_does_not_fit_fails_the_preview_with_colos_message(
    engine: Engine, tmp_path: Path
) -> None:
    project = yaml_project(engine, tmp_path / "project", tmp_path / "rendered", maxModelLen="65536")

    preview = pulumi(engine, project, "preview")

    output = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert "ColocatedPair chat: the plan is refused; nothing was deployed:" in output
    assert "llm.maxModelLen: ValueError: User-specified max_model_len (65536)" in output
    exported = pulumi(engine, project, "stack", "export")
    resources = yaml.safe_load(exported.stdout)["deployment"].get("resources") or []
    assert not [r for r in resources if "ColocatedPair" in r["type"] or r["urn"].endswith("::chat")]
