"""Upgrading a deployed stack to colo's one token scheme replaces nothing, under the real engine.

The stack is deployed (rendered to a directory) by the release before the rename, whose components were typed
`colo:pair:CoLocatedPair`, `colo:namespace:Namespace`, ... and whose objects went through the engine's default
Kubernetes provider; then the same stack is updated by this checkout, whose components are `colo:index:<Name>`
with aliases, whose single-object wrappers are folded into their parents, and whose objects go through the
stack's own provider. The rename itself must create, replace and delete no object: only the folded wrapper
components go (they held no object of their own). What colo renders has also moved on since that release (a
dashboard panel, a vLLM argument); those objects may change, as any upgrade changes them, and only those: every
object the engine touches is one whose rendered manifest differs between the two releases, and it touches it
for a field of its content. The earlier release is read from this repository's history.
"""

from __future__ import annotations

import subprocess
import tarfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.diff.objects import Manifest
from colo.inline_engine import Outcome
from tests.engine.conftest import Engine, project_copy
from tests.engine.objects import objects_in
from tests.paths import REPO_ROOT

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]

# The last commit before the rename: components as first released, the default Kubernetes provider.
BEFORE_RENAME = "723ef84"
FOLDED_WRAPPERS = {
    "colo:namespace:Namespace",
    "colo:pod_scripts:PodScripts",
    "colo:gpu_claim:GpuClaimTemplate",
    "colo:hf_token:HfTokenSecret",
    "colo:api_key:ApiKeySecret",
}
CHANGING = {"create", "replace", "create-replacement", "delete-replaced", "delete"}


def earlier_release(destination: Path) -> Path:
    """The colo package and stack files of BEFORE_RENAME, from the repository's history."""
    archive = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", BEFORE_RENAME, "colo", "stacks"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"commit {BEFORE_RENAME} is not in this clone's history (a shallow clone?)")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(destination, filter="data")
    return destination


def on_existing_nodes(config: dict[str, Any]) -> dict[str, Any]:
    """A stack's config with its GPU nodes existing already: the Kubernetes side alone (no AWS provider is
    built for these tests)."""
    config = {key: value for key, value in config.items() if not key.startswith("aws:")}
    pool = {k: v for k, v in config["colo:nodePool"].items() if k not in ("mode", "subnetIds")}
    config["colo:nodePool"] = {**pool, "mode": "existing", "nodeSelector": {"colo.dev/gpu-pool": "colo"}}
    return config


@dataclass(frozen=True)
class Upgrade:
    before: Outcome  # `up` by the earlier release
    preview: Outcome  # `preview` by this checkout
    after: Outcome  # `up` by this checkout
    rendered_before: dict[str, Manifest]  # the objects the earlier release wrote, keyed kind/namespace/name
    rendered_after: dict[str, Manifest]  # the objects this checkout wrote

    def kinds_whose_content_moved(self) -> dict[str, int]:
        """How many objects of each kind render differently in this checkout than in the earlier release."""
        moved: dict[str, int] = {}
        for key, manifest in self.rendered_after.items():
            if self.rendered_before.get(key) != manifest:
                moved[manifest["kind"]] = moved.get(manifest["kind"], 0) + 1
        return moved


def upgrade(engine: Engine, stack: str, root: Path) -> Upgrade:
    earlier = earlier_release(root / "earlier")
    old_config = on_existing_nodes(
        yaml.safe_load((earlier / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    )
    project = project_copy(root / "project", {})
    stack_file = project / "stacks" / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": old_config}, sort_keys=False))
    rendered = root / "rendered"
    before = engine.run("up", stack, project, rendered, colo_tree=earlier)
    rendered_before = objects_in(rendered)
    # This checkout's stack file: the same settings, and the cluster it names (rendering reads neither key).
    written = yaml.safe_load(stack_file.read_text())  # the engine wrote the stack's encryption salt into it
    written["config"]["colo:cluster"] = {
        **written["config"]["colo:cluster"],
        "kubeconfigContext": "kind-colo",
        "apiServer": "https://127.0.0.1:6443",
    }
    stack_file.write_text(yaml.safe_dump(written, sort_keys=False))
    preview = engine.run("preview", stack, project, rendered)
    after = engine.run("up", stack, project, rendered)
    return Upgrade(before, preview, after, rendered_before, objects_in(rendered))


@pytest.fixture(scope="module", params=["prod", "dev"])
def upgraded(
    request: pytest.FixtureRequest, engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> Upgrade:
    stack: str = request.param
    return upgrade(engine, stack, tmp_path_factory.mktemp(f"upgrade-{stack}"))


def changes(outcome: Outcome) -> list[tuple[str, str, str]]:
    return [(step.op, step.type, step.name) for step in outcome.steps if step.op in CHANGING]


def test_the_earlier_release_deployed_the_stack(upgraded: Upgrade) -> None:
    assert upgraded.before.succeeded, upgraded.before.output
    types = {step.type for step in upgraded.before.steps}
    assert "colo:pair:CoLocatedPair" in types and "colo:namespace:Namespace" in types


def test_the_upgrade_leaves_the_set_of_objects_as_it_was(upgraded: Upgrade) -> None:
    assert upgraded.rendered_after.keys() == upgraded.rendered_before.keys()


@pytest.mark.parametrize("run", ["preview", "after"])
def test_the_upgrade_creates_and_deletes_no_object_outright(upgraded: Upgrade, run: str) -> None:
    outcome: Outcome = getattr(upgraded, run)
    assert outcome.succeeded, outcome.output
    outright = [c for c in changes(outcome) if not c[1].startswith("colo:") and c[0] in ("create", "delete")]
    assert outright == []


@pytest.mark.parametrize("run", ["preview", "after"])
def test_the_upgrade_touches_only_objects_whose_content_moved_and_for_their_content(
    upgraded: Upgrade, run: str
) -> None:
    outcome: Outcome = getattr(upgraded, run)
    touched = [
        step
        for step in outcome.steps
        if step.type.startswith("kubernetes:") and step.op in ("update", "replace")
    ]
    touched_per_kind: dict[str, int] = {}
    for step in touched:
        kind = step.type.rsplit(":", 1)[1]
        touched_per_kind[kind] = touched_per_kind.get(kind, 0) + 1
        assert step.diffs, f"{step.name} is touched with no field of its own changed: the rename replaced it"
        assert all(path.startswith(("data", "spec")) for path in step.diffs), (step.name, step.diffs)
    assert touched_per_kind == upgraded.kinds_whose_content_moved()


@pytest.mark.parametrize("run", ["preview", "after"])
def test_only_the_folded_wrapper_components_go(upgraded: Upgrade, run: str) -> None:
    outcome: Outcome = getattr(upgraded, run)
    components = [change for change in changes(outcome) if change[1].startswith("colo:")]
    assert components, "the earlier release declared wrapper components of a single object"
    assert {(op, type_) for op, type_, _ in components} <= {
        ("delete", wrapper) for wrapper in FOLDED_WRAPPERS
    }


def test_every_object_is_now_held_under_its_new_type_and_the_stacks_own_provider(upgraded: Upgrade) -> None:
    # A replaced object's delete-replaced step names the state it leaves, under its old parent.
    kept = [
        step
        for step in upgraded.after.steps
        if step.type.startswith("kubernetes:") and step.op != "delete-replaced"
    ]
    assert kept and {step.op for step in kept} <= {"same", "update", "replace", "create-replacement"}
    assert sum(step.op == "same" for step in kept) > len(kept) // 2, "most objects did not change at all"
    old_tokens = (
        *FOLDED_WRAPPERS,
        "colo:pair:",
        "colo:model_store:",
        "colo:device_plugin:",
        "colo:monitoring:",
    )
    assert [step.urn for step in kept if any(token in step.urn for token in old_tokens)] == []
    providers = [step for step in upgraded.after.steps if step.type == "pulumi:providers:kubernetes"]
    assert [step.name for step in providers] == ["cluster"]
