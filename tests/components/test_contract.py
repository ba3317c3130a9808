"""One public contract: every component is `colo:index:<Name>`, its output keys are camelCase, and what a
deployed stack holds under earlier names is reached through aliases (the engine proves no replacement in
tests/engine/test_renamed_types.py). Here: the aliases name exactly the URNs the first release deployed."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest

from colo.components import Cluster, ColocatedPair, NodePool
from colo.components.cluster_provider import default_provider_name
from colo.mock_run import run_program
from tests.components.conftest import AwsMocks, run_under_mocks
from tests.components.stacks import variant
from tests.components.test_colocated_pair import local_pair_args
from tests.paths import REPO_ROOT

# A program that runs colo's and exports every alias a resource was declared with, its Outputs resolved
# (colo.program.export: what run_program reads back).
ALIAS_PROGRAM = """
import pulumi
from colo.program import export, run

found = []
pulumi.runtime.register_stack_transformation(
    lambda args: found.extend((args.type_, args.name, a) for a in args.opts.aliases or []) and None
)
run()
export(
    "aliases",
    [
        {
            "type": t,
            "name": n,
            **{k: (None if v is ... else v) for k, v in (("old_type", a.type_), ("old_name", a.name), ("old_parent", a.parent))},
        }
        for t, n, a in found
        if isinstance(a, pulumi.Alias)
    ],
)
"""
RENAMED = {
    "colo:index:ColocatedPair": "colo:pair:CoLocatedPair",
    "colo:index:GpuNodePool": "colo:node_pool:GpuNodePool",
    "colo:index:ModelStore": "colo:model_store:ModelStore",
    "colo:index:NvidiaDevicePlugin": "colo:device_plugin:NvidiaDevicePlugin",
    "colo:index:ServerMonitoring": "colo:monitoring:ServerMonitoring",
    "colo:index:DcgmExporter": "colo:monitoring:DcgmExporter",
}


def aliases_of(stack: str, tmp_path: Path) -> tuple[AwsMocks, list[dict[str, Any]]]:
    """The stack's run under mocks, and every alias its resources were declared with."""
    program = tmp_path / "program.py"
    program.write_text(ALIAS_PROGRAM)
    mocks = AwsMocks()
    run = run_program(replace(variant(stack), project="colo"), program=program, mocks=mocks)
    found: list[dict[str, Any]] = run.outputs["aliases"]
    return mocks, found


@pytest.mark.parametrize("stack", ["local", "dev", "prod"])
def test_every_component_is_colo_index_and_aliased_from_its_first_released_type(
    stack: str, tmp_path: Path
) -> None:
    mocks, aliases = aliases_of(stack, tmp_path)
    components = {r.type for r in mocks.resources if not r.custom}
    assert components and all(t.startswith("colo:index:") for t in components), components
    renamed = {(a["type"], a["old_type"]) for a in aliases if a["old_type"] and a["type"].startswith("colo:")}
    assert renamed == {(t, RENAMED[t]) for t in components}


def old_wrapper_parents(stack: str, tmp_path: Path) -> dict[tuple[str, str], str]:
    return {
        (a["type"], a["name"]): a["old_parent"] for a in aliases_of(stack, tmp_path)[1] if a["old_parent"]
    }


def test_objects_that_had_a_wrapper_of_their_own_name_it_as_their_old_parent(tmp_path: Path) -> None:
    found = old_wrapper_parents("prod", tmp_path)
    assert found == {
        (
            "kubernetes:core/v1:Namespace",
            "namespace",
        ): "urn:pulumi:prod::colo::colo:namespace:Namespace::namespace",
        ("kubernetes:core/v1:ConfigMap", "pod-scripts"): (
            "urn:pulumi:prod::colo::colo:pod_scripts:PodScripts::pod-scripts"
        ),
    }


def test_a_dra_stacks_claim_template_and_secrets_name_their_wrappers(tmp_path: Path) -> None:
    stack = "dev"
    secret = variant(stack, secret_token=True, secret_api_key=True)
    program = tmp_path / "program.py"
    program.write_text(ALIAS_PROGRAM)
    run = run_program(replace(secret, project="colo"), program=program, mocks=AwsMocks())
    found = {(a["type"], a["name"]): a["old_parent"] for a in run.outputs["aliases"] if a["old_parent"]}
    assert found[("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate", "gpu-claim")] == (
        "urn:pulumi:dev::colo::colo:gpu_claim:GpuClaimTemplate::gpu-claim"
    )
    assert (
        found[("kubernetes:core/v1:Secret", "hf-token")]
        == "urn:pulumi:dev::colo::colo:hf_token:HfTokenSecret::hf-token"
    )
    assert found[("kubernetes:core/v1:Secret", "vllm-api-key")] == (
        "urn:pulumi:dev::colo::colo:api_key:ApiKeySecret::vllm-api-key"
    )


def test_a_pair_alone_names_the_wrappers_it_declared_inside_its_first_type(tmp_path: Path) -> None:
    found: list[tuple[str, str, Any]] = []

    def build() -> dict[str, pulumi.Input[Any]]:
        pulumi.runtime.register_stack_transformation(
            lambda args: found.extend((args.type_, args.name, a) for a in args.opts.aliases or []) and None
        )
        ColocatedPair(
            "chat", local_pair_args(cluster=Cluster(gpu_pairing="uuid-handoff"), node_pool=NodePool())
        )
        return {
            "parents": [
                a.parent for _, _, a in found if isinstance(a, pulumi.Alias) and a.parent not in (None, ...)
            ]
        }

    _, outputs = run_under_mocks(build)
    assert outputs["parents"] == [
        "urn:pulumi:test::own-program::colo:pair:CoLocatedPair$colo:pod_scripts:PodScripts::chat-scripts"
    ]


def test_the_stacks_provider_takes_over_the_default_provider_it_replaces(tmp_path: Path) -> None:
    (provider,) = [a for a in aliases_of("local", tmp_path)[1] if a["type"] == "pulumi:providers:kubernetes"]
    assert provider["old_name"] == default_provider_name()
    assert default_provider_name().startswith("default_4_")


def test_component_output_keys_are_camel_case() -> None:
    """Every key a component registers as an output reads as Pulumi's (and pulumi-eks's) do: camelCase."""
    keys = [
        key.value
        for path in sorted((REPO_ROOT / "colo" / "components").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_outputs"
        and node.args
        and isinstance(node.args[0], ast.Dict)
        for key in node.args[0].keys
        if isinstance(key, ast.Constant)
    ]
    assert keys and "deploymentName" in keys
    assert [key for key in keys if not re.fullmatch(r"[a-z][a-zA-Z0-9]*", str(key))] == []
