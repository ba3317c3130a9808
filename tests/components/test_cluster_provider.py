"""Every Kubernetes object colo declares goes to the cluster the stack names, through one explicit provider;
a deploy through a context that reaches another API server is refused before anything is registered."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from colo.components.errors import ProgramError
from colo.mock_run import ProgramRun, Recorded, RecordingMocks, run_program
from colo.stackfiles import StackFile
from tests.components.conftest import AwsMocks
from tests.components.stacks import variant

PROVIDER = "pulumi:providers:kubernetes"


def kubeconfig(path: Path, context: str, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
                "current-context": context,
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    return path


def local_with_kubeconfig(tmp_path: Path, server: str = "https://127.0.0.1:6443") -> StackFile:
    path = kubeconfig(tmp_path / "kubeconfig", "kind-colo", server)
    return variant("local", cluster={"kubeconfig": str(path)})


def deployed(stack_file: StackFile) -> ProgramRun:
    """The program as `pulumi up` runs it against the stack's cluster (no render directory)."""
    return run_program(stack_file, mocks=AwsMocks(), render_dir=None)


def the_provider(run: ProgramRun) -> Recorded:
    (provider,) = run.mocks.of_type(PROVIDER)
    return provider


def kubernetes_objects(run: ProgramRun) -> list[Recorded]:
    return [r for r in run.mocks.resources if r.custom and r.type.startswith("kubernetes:")]


def assert_every_object_goes_through(run: ProgramRun, provider: Recorded) -> None:
    objects = kubernetes_objects(run)
    assert objects
    assert {r.provider.split("::")[-2] for r in objects if r.provider} == {provider.name}
    assert all(r.provider and f"{PROVIDER}::{provider.name}::" in r.provider for r in objects)


def test_a_stack_on_existing_nodes_deploys_through_its_context_and_kubeconfig_only(tmp_path: Path) -> None:
    run = deployed(local_with_kubeconfig(tmp_path))
    provider = the_provider(run)
    assert provider.inputs["context"] == "kind-colo"
    assert provider.inputs["kubeconfig"] == str(tmp_path / "kubeconfig")
    assert "renderYamlToDirectory" not in provider.inputs
    assert_every_object_goes_through(run, provider)


def test_a_managed_stack_reaches_its_eks_cluster_as_the_stacks_aws_identity() -> None:
    prod = variant("prod")
    run = deployed(replace(prod, others={**prod.others, "aws:profile": "colo-admin"}))
    provider = the_provider(run)
    config = json.loads(provider.inputs["kubeconfig"])
    (cluster,) = config["clusters"]
    assert cluster["cluster"] == {
        "server": "https://example.eks.amazonaws.com",
        "certificate-authority-data": "Zm9v",
    }
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "aws"
    assert user["user"]["exec"]["args"] == [
        "eks", "get-token", "--cluster-name", "colo-prod", "--output", "json",
        "--region", "us-east-1", "--profile", "colo-admin",
    ]  # fmt: skip
    assert "context" not in provider.inputs
    assert_every_object_goes_through(run, provider)


@pytest.mark.parametrize("stack", ["local", "dev", "prod"])
def test_a_render_reaches_no_cluster_and_every_object_goes_to_the_render_provider(stack: str) -> None:
    run = run_program(variant(stack), mocks=AwsMocks(), render_dir="out/manifests")
    provider = the_provider(run)
    assert provider.inputs == {"renderYamlToDirectory": "out/manifests"}
    assert_every_object_goes_through(run, provider)


def test_a_context_that_reaches_another_server_stops_the_program_before_anything_is_registered(
    tmp_path: Path,
) -> None:
    mocks = RecordingMocks()
    with pytest.raises(ProgramError) as raised:
        run_program(local_with_kubeconfig(tmp_path, "https://10.9.9.9:6443"), mocks=mocks, render_dir=None)
    assert "colo:cluster.apiServer" in str(raised.value)
    assert "reaches https://10.9.9.9:6443" in str(raised.value)
    assert mocks.resources == []


def test_a_stack_without_a_context_is_refused_by_name_even_where_it_only_renders() -> None:
    local = variant("local")
    cluster = {k: v for k, v in local.values["cluster"].items() if k != "kubeconfigContext"}
    mocks = RecordingMocks()
    with pytest.raises(ProgramError, match=r"colo:cluster\.kubeconfigContext: required"):
        run_program(replace(local, values={**local.values, "cluster": cluster}), mocks=mocks)
    assert mocks.resources == []


def test_the_default_providers_context_setting_is_refused_rather_than_ignored() -> None:
    local = variant("local")
    mocks = RecordingMocks()
    with pytest.raises(ProgramError, match=r"kubernetes:context: not read"):
        run_program(replace(local, others={**local.others, "kubernetes:context": "staging"}), mocks=mocks)
    assert mocks.resources == []
