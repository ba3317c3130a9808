"""`pulumi up` of the local stack by the real engine against the live API server: created and awaited, updated in
place after an edit, destroyed without a trace; a refused stack creates nothing."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.built_tools import PULUMI_ENGINE_SCRIPT, absence, bin_dir_of
from tests.control_plane.api import Api, key_of, wait_until
from tests.control_plane.engine import CONTEXT, EngineOnCluster, Run, edit_stack_file, kubernetes_steps
from tests.control_plane.evidence import record, step_summary
from tests.control_plane.stacks import STACKS, nodes_for_an_engine, render
from tests.control_plane.workloads import available
from tests.engine.conftest import Engine, project_copy

pytestmark = [pytest.mark.control_plane, pytest.mark.engine, pytest.mark.xdist_group("control-plane")]

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.fixture(scope="module")
def engine_on_cluster(
    api: Api, control_plane: Any, tmp_path_factory: pytest.TempPathFactory
) -> EngineOnCluster:
    assert absence("engine") is None, absence("engine")
    home = tmp_path_factory.mktemp("engine-home")
    (home / "state").mkdir()
    return EngineOnCluster(
        Engine(bin_dir_of(PULUMI_ENGINE_SCRIPT), home), control_plane.kubeconfig, control_plane.server
    )


@dataclass(frozen=True)
class Snapshot:
    """What the API server held for the stack's objects right after an engine run."""

    present: dict[str, dict[str, Any]]  # key -> object, for every rendered object found
    available: dict[str, bool]  # Deployment -> Available

    def deployment(self, name: str) -> dict[str, Any]:
        (found,) = [
            o for k, o in self.present.items() if k.startswith("Deployment/") and k.endswith(f"/{name}")
        ]
        return found


@dataclass(frozen=True)
class Lifecycle:
    rendered: list[dict[str, Any]]
    up: Run
    after_up: Snapshot
    update: Run
    after_update: Snapshot
    destroy: Run
    after_destroy: Snapshot
    state_after_destroy: set[str]


def snapshot(api: Api, rendered: list[dict[str, Any]]) -> Snapshot:
    present = {key_of(m): api.get(m) for m in rendered if api.exists(m)}
    deployments = [m for m in rendered if m["kind"] == "Deployment" and key_of(m) in present]
    return Snapshot(
        present,
        {
            d["metadata"]["name"]: available(api, d["metadata"]["namespace"], d["metadata"]["name"])
            for d in deployments
        },
    )


@pytest.fixture(scope="module")
def lifecycle(
    api: Api, engine_on_cluster: EngineOnCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lifecycle]:
    setup = STACKS["local"]
    root = tmp_path_factory.mktemp("engine-local")
    rendered = render(setup.stack_file, root / "render")
    with nodes_for_an_engine(api, setup, rendered):
        project = project_copy(root / "project", {"local": setup.stack_file})
        engine_on_cluster.aim(project / "stacks" / "Pulumi.local.yaml")
        up = engine_on_cluster.run("up", "local", project)
        after_up = snapshot(api, rendered)

        def longer_context(config: dict[str, Any]) -> None:
            config["colo:pairs"][0]["llm"]["maxModelLen"] = 16384

        edit_stack_file(project / "stacks" / "Pulumi.local.yaml", longer_context)
        update = engine_on_cluster.run("up", "local", project)
        after_update = snapshot(api, rendered)
        destroy = engine_on_cluster.run("destroy", "local", project)
        namespaces = [m for m in rendered if m["kind"] == "Namespace"]
        wait_until(lambda: not any(api.exists(n) for n in namespaces), 120, "the stack's namespaces to go")
        after_destroy = snapshot(api, rendered)
        state = engine_on_cluster.engine.resource_types_in_state("local", project)
        record(
            "engine-local-lifecycle",
            {
                run: step_summary(outcome.outcome)
                for run, outcome in (("up", up), ("update", update), ("destroy", destroy))
            }
            | {"left_in_state_after_destroy": sorted(state)},
        )
        yield Lifecycle(rendered, up, after_up, update, after_update, destroy, after_destroy, state)


def kind_of(type_token: str) -> str:
    return type_token.rsplit(":", 1)[-1]


def test_up_creates_every_object_colo_renders_on_the_api_server(lifecycle: Lifecycle) -> None:
    assert lifecycle.up.outcome.succeeded, lifecycle.up.outcome.output
    steps = kubernetes_steps(lifecycle.up.outcome)
    assert {step.op for step in steps} == {"create"}
    assert Counter(kind_of(step.type) for step in steps) == Counter(m["kind"] for m in lifecycle.rendered)
    assert sorted(lifecycle.after_up.present) == sorted(key_of(m) for m in lifecycle.rendered)


def test_up_returns_only_once_every_deployment_is_available(lifecycle: Lifecycle) -> None:
    """The provider awaits each Deployment's rollout: read right after `up` returned, each is Available."""
    assert lifecycle.after_up.available and all(lifecycle.after_up.available.values()), (
        lifecycle.after_up.available
    )


def test_the_verify_hook_runs_after_the_deployment_is_created_and_its_failure_only_warns(
    lifecycle: Lifecycle,
) -> None:
    """kwok serves a vLLM 0.15.1 log from an A100 for every `llm` container in namespace colo, which the local
    stack's plan (vLLM 0.19.1 on an L40S) does not predict: the hook fails, the engine warns, the update stands."""
    (warning,) = [m for m in lifecycle.up.messages("warning") if "colo-verify-chat" in m]
    assert warning.startswith('AfterCreate hook "colo-verify-chat" failed: colo verify: stack local')
    assert "chat-llm (colo/chat-" in warning and "PLAN WRONG" in warning
    assert lifecycle.up.outcome.succeeded and lifecycle.up.outcome.errors == []


def test_a_second_up_after_an_edit_updates_the_one_deployment_in_place(lifecycle: Lifecycle) -> None:
    assert lifecycle.update.outcome.succeeded, lifecycle.update.outcome.output
    changed = [step for step in kubernetes_steps(lifecycle.update.outcome) if step.op != "same"]
    assert [(step.op, step.type, step.name) for step in changed] == [("update", DEPLOYMENT, "chat")]
    before, after = lifecycle.after_up.deployment("chat"), lifecycle.after_update.deployment("chat")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]  # the same object, not a replacement
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    (llm,) = [c for c in after["spec"]["template"]["spec"]["containers"] if c["name"] == "llm"]
    assert llm["args"][llm["args"].index("--max-model-len") + 1] == "16384"
    assert lifecycle.after_update.available == {"chat": True}
    assert any(
        m.startswith('AfterUpdate hook "colo-verify-chat" failed')
        for m in lifecycle.update.messages("warning")
    )


def test_destroy_leaves_nothing_on_the_api_server_or_in_the_state(lifecycle: Lifecycle) -> None:
    assert lifecycle.destroy.outcome.succeeded, lifecycle.destroy.outcome.output
    deleted = [step for step in kubernetes_steps(lifecycle.destroy.outcome) if step.op == "delete"]
    assert len(deleted) == len(lifecycle.rendered)
    assert lifecycle.after_destroy.present == {}
    assert lifecycle.state_after_destroy <= {"pulumi:pulumi:Stack"}


def test_a_refused_stack_fails_in_the_engine_and_creates_nothing_on_the_api_server(
    api: Api, engine_on_cluster: EngineOnCluster, tmp_path: Path
) -> None:
    project = project_copy(tmp_path / "project", {"refused": STACKS["local"].stack_file})

    def dra_on_an_old_cluster(config: dict[str, Any]) -> None:
        config["colo:cluster"] = {
            **config["colo:cluster"],
            "kubernetesVersion": "1.33",
            "gpuPairing": "dra",
            "namespace": "colo-refused",
        }

    engine_on_cluster.aim(project / "stacks" / "Pulumi.refused.yaml")
    edit_stack_file(project / "stacks" / "Pulumi.refused.yaml", dra_on_an_old_cluster)

    up = engine_on_cluster.run("up", "refused", project).outcome

    assert not up.succeeded
    assert "colo:cluster.kubernetesVersion" in "\n".join(up.errors)
    assert kubernetes_steps(up) == []
    assert not api.exists({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "colo-refused"}})
    assert engine_on_cluster.engine.resource_types_in_state("refused", project) <= {"pulumi:pulumi:Stack"}


def test_every_object_goes_through_the_stacks_own_provider_never_the_default_one(
    lifecycle: Lifecycle,
) -> None:
    providers = [s for s in lifecycle.up.outcome.steps if s.type == "pulumi:providers:kubernetes"]
    assert [(s.op, s.name) for s in providers] == [("create", "cluster")]


def test_a_stack_naming_another_api_server_is_refused_in_the_engine_and_creates_nothing(
    api: Api, engine_on_cluster: EngineOnCluster, tmp_path: Path
) -> None:
    """The context is this cluster's, but the stack names another API server: a laptop pointed at the wrong
    cluster deploys nothing there."""
    project = project_copy(tmp_path / "project", {"elsewhere": STACKS["local"].stack_file})
    stack_file = project / "stacks" / "Pulumi.elsewhere.yaml"
    engine_on_cluster.aim(stack_file, server="https://127.0.0.1:1")

    def own_namespace(config: dict[str, Any]) -> None:
        config["colo:cluster"] = {**config["colo:cluster"], "namespace": "colo-elsewhere"}

    edit_stack_file(stack_file, own_namespace)
    up = engine_on_cluster.run("up", "elsewhere", project).outcome
    assert not up.succeeded
    errors = "\n".join(up.errors)
    assert "colo:cluster.apiServer" in errors and f"reaches {engine_on_cluster.server}" in errors
    assert [s for s in up.steps if s.type.startswith(("kubernetes:", "pulumi:providers:"))] == []
    assert not api.exists({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "colo-elsewhere"}})


def dra_on_existing_nodes(directory: Path, server: str) -> Path:
    """The dev stack (dra) on GPU nodes that already exist: the Kubernetes side alone, no AWS provider."""
    source: dict[str, Any] = yaml.safe_load(STACKS["dev"].stack_file.read_text())
    config = source["config"]
    config.pop("aws:region", None)
    config["colo:cluster"] = {**config["colo:cluster"], "kubeconfigContext": CONTEXT, "apiServer": server}
    config["colo:nodePool"] = {
        "mode": "existing",
        "gpu": "L40S",
        "instanceType": "g6e.2xlarge",
        "nodeSelector": STACKS["dev"].pool_labels,
    }
    path = directory / "Pulumi.dra.yaml"
    path.write_text(yaml.safe_dump(source, sort_keys=False))
    return path


def test_provider_4_25_deploys_a_dra_stack_whose_claim_template_it_has_no_schema_for(
    api: Api, engine_on_cluster: EngineOnCluster, tmp_path: Path
) -> None:
    """The built provider's schema stops at resource.k8s.io/v1beta2; the SDK (4.34) declares the template as
    resource.k8s.io/v1. The provider resolves a type it has no schema for through the API server's discovery,
    as for a custom resource, so the stack deploys against a server that serves v1."""
    stack_file = dra_on_existing_nodes(tmp_path, engine_on_cluster.server)
    setup = dataclasses.replace(STACKS["dev"], stack_file=stack_file)
    rendered = render(stack_file, tmp_path / "render")
    project = project_copy(tmp_path / "project", {"dra": stack_file})
    with nodes_for_an_engine(api, setup, rendered):
        up = engine_on_cluster.run("up", "dra", project).outcome
        assert up.succeeded, up.output
        (template,) = [m for m in rendered if m["kind"] == "ResourceClaimTemplate"]
        assert api.exists(template)
        assert available(api, "colo-dev", "rag")
        destroy = engine_on_cluster.run("destroy", "dra", project).outcome
        assert destroy.succeeded, destroy.output
        assert not api.exists(template)
