"""The real Pulumi engine and Kubernetes provider run colo's program on the local stack.

The provider renders to a directory (kubernetes:renderYamlToDirectory) instead of a cluster, which lets the
engine's own checks run with no cluster and gives a render independent of `colo render` to hold it against.
Managed-mode stacks (dev, prod) need the AWS provider, which is not built here; they stay under the mock
runtime.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.diff.objects import Manifest
from colo.inline_engine import Outcome, Step
from tests.engine.conftest import Deployed, Engine, preview_then_up, project_copy
from tests.engine.objects import fields_added, fields_that_differ, objects_in
from tests.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]

LOCAL = REPO_ROOT / "stacks" / "Pulumi.local.yaml"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def kubernetes_steps(outcome: Outcome) -> list[Step]:
    return [step for step in outcome.steps if step.type.startswith("kubernetes:")]


def kind_of(step: Step) -> str:
    return step.type.rsplit(":", 1)[-1]


def stack_file_with(path: Path, **changes: object) -> dict[str, object]:
    """The local stack's config with top-level `colo:` keys merged with `changes`."""
    source: dict[str, object] = yaml.safe_load(LOCAL.read_text())
    config = source["config"]
    assert isinstance(config, dict)
    for key, fields in changes.items():
        assert isinstance(fields, dict)
        config[f"colo:{key}"] = {**config[f"colo:{key}"], **fields}
    path.write_text(yaml.safe_dump(source, sort_keys=False))
    return source


@pytest.fixture(scope="module")
def deployed(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    root = tmp_path_factory.mktemp("engine-local")
    project = project_copy(root / "project", {"local": LOCAL})
    return preview_then_up(engine, "local", project, root / "rendered")


@pytest.fixture(scope="module")
def colo_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Manifest]:
    out = tmp_path_factory.mktemp("colo-render-local")
    assert main(["render", "--stack", "local", "--out", str(out)]) == 0
    return objects_in(out)


def test_preview_plans_one_create_per_colo_object_and_writes_no_file(
    deployed: Deployed, colo_objects: dict[str, Manifest]
) -> None:
    assert deployed.preview.succeeded, deployed.preview.output
    steps = kubernetes_steps(deployed.preview)
    assert {step.op for step in steps} == {"create"}
    assert Counter(kind_of(step) for step in steps) == Counter(str(m["kind"]) for m in colo_objects.values())
    assert deployed.files_after_preview == []


def test_up_writes_the_objects_colo_render_writes(
    deployed: Deployed, colo_objects: dict[str, Manifest]
) -> None:
    assert deployed.up.succeeded, deployed.up.output
    assert {step.op for step in kubernetes_steps(deployed.up)} == {"create"}
    assert sorted(objects_in(deployed.rendered)) == sorted(colo_objects)


def test_a_render_run_leaves_the_stack_file_with_the_users_settings(deployed: Deployed) -> None:
    """--render-dir is set for the run only: a later `pulumi up` of the same stack file deploys, not renders."""
    written = yaml.safe_load((deployed.project / "stacks" / "Pulumi.local.yaml").read_text())
    original = yaml.safe_load(LOCAL.read_text())
    assert "kubernetes:renderYamlToDirectory" not in written.get("config", {})
    assert written["config"] == original["config"]


def test_every_field_colo_sets_comes_out_of_the_provider_unchanged(
    deployed: Deployed, colo_objects: dict[str, Manifest]
) -> None:
    engine_objects = objects_in(deployed.rendered)
    assert set(colo_objects) <= set(engine_objects)
    differences = {key: fields_that_differ(ours, engine_objects[key]) for key, ours in colo_objects.items()}
    assert {key: paths for key, paths in differences.items() if paths} == {}


def test_the_provider_adds_no_field_colo_does_not_set(
    deployed: Deployed, colo_objects: dict[str, Manifest]
) -> None:
    engine_objects = objects_in(deployed.rendered)
    added = {key: fields_added(ours, engine_objects[key]) for key, ours in colo_objects.items()}
    assert {key: paths for key, paths in added.items() if paths} == {}


def test_a_changed_max_model_len_previews_a_change_to_the_one_deployment_only(
    deployed: Deployed, engine: Engine, colo_objects: dict[str, Manifest], tmp_path: Path
) -> None:
    assert deployed.up.succeeded, deployed.up.output
    # Same backend, so the same deployed state; a copy of the project whose stack file differs.
    edited = tmp_path / "project"
    edited.mkdir()
    shutil.copy(deployed.project / "Pulumi.yaml", edited / "Pulumi.yaml")
    shutil.copytree(deployed.project / "stacks", edited / "stacks")
    stack_path = edited / "stacks" / "Pulumi.local.yaml"
    stack = yaml.safe_load(stack_path.read_text())
    stack["config"]["colo:pairs"][0]["llm"]["maxModelLen"] = 40960
    stack_path.write_text(yaml.safe_dump(stack, sort_keys=False))

    preview = engine.run("preview", "local", edited, deployed.rendered)

    assert preview.succeeded, preview.output
    changed = [step for step in kubernetes_steps(preview) if step.op != "same"]
    deployments = [step for step in kubernetes_steps(deployed.up) if step.type == DEPLOYMENT]
    assert [(step.type, step.urn) for step in changed] == [(DEPLOYMENT, deployments[0].urn)]
    assert changed[0].op in {"update", "replace"}
    llm = colo_objects["Deployment/colo/chat"]["spec"]["template"]["spec"]["containers"][0]
    value_at = list(llm["args"]).index("--max-model-len") + 1
    # max_model_len shapes the compiled graphs (vLLM hashes it), so the LLM's compile cache moves to a new
    # directory of the model volume with it (colo.plan.compile_cache); nothing else changes.
    (cache_at,) = [
        i
        for i, mount in enumerate(llm["volumeMounts"])
        if mount.get("subPath", "").startswith(".vllm-cache/")
    ]
    assert set(changed[0].diffs) == {
        f"spec.template.spec.containers[0].args[{value_at}]",
        f"spec.template.spec.containers[0].volumeMounts[{cache_at}].subPath",
    }
    assert f'~ [{value_at}]: "32768" => "40960"' in preview.output


def test_a_refused_stack_fails_in_the_engine_with_colos_message_and_creates_nothing(
    engine: Engine, tmp_path: Path
) -> None:
    refused = tmp_path / "Pulumi.refused.yaml"
    stack_file_with(refused, cluster={"kubernetesVersion": "1.33", "gpuPairing": "dra"})
    project = project_copy(tmp_path / "project", {"refused": refused})
    rendered = tmp_path / "rendered"

    up = engine.run("up", "refused", project, rendered)

    assert not up.succeeded
    message = "\n".join(up.errors)
    assert "colo:cluster.kubernetesVersion" in message
    assert "Upgrade the cluster" in message
    assert kubernetes_steps(up) == []
    assert not rendered.exists() or objects_in(rendered) == {}
    assert engine.resource_types_in_state("refused", project) <= {"pulumi:pulumi:Stack"}
