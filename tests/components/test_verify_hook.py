"""Where the after-rollout `colo verify` hook is bound, and with what options.

That it runs, reports in the engine's output and only warns when it fails is proved against a live API
server (tests/control_plane/test_verify_hooks.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pulumi
import pytest
from pulumi.runtime.config import CONFIG

from colo.cluster.access import ClusterAccess
from colo.components.labels import pair_selector
from colo.components.verify_hook import (
    PlanNotConfirmed,
    after_rollout,
    deployed_namespace,
    stack_config_access,
)
from colo.inline_engine import RENDER_KEY
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.stack import make_plan
from tests.components.conftest import declare_under_mocks, stack_config


def bindings(render_dir: str | None = None) -> list[pulumi.ResourceHookBinding | None]:
    config = stack_config("prod")
    spec = kubernetes_spec(config, make_plan(config))
    found: list[pulumi.ResourceHookBinding | None] = []

    def build() -> None:
        if render_dir is not None:
            pulumi.runtime.set_config(RENDER_KEY, render_dir)
        try:
            found.extend(after_rollout(pair, pair_selector(spec, pair.name)) for pair in spec.pairs)
        finally:
            CONFIG.get().pop(RENDER_KEY, None)  # the runtime's config outlives this mocked stack

    declare_under_mocks(build)
    return found


def test_each_pairs_deployment_verifies_after_create_and_after_update_and_a_failure_only_warns() -> None:
    for binding, pair in zip(bindings(), ("qwen27b", "qwen35b-moe", "gemma31b"), strict=True):
        assert binding is not None
        assert binding.after_create == binding.after_update
        (hook,) = binding.after_create or []
        assert isinstance(hook, pulumi.ResourceHook)
        assert hook.name == f"colo-verify-{pair}"
        assert hook.opts is not None and hook.opts.ignore_errors and not hook.opts.on_dry_run
        assert not (
            binding.before_create or binding.before_update or binding.before_delete or binding.after_delete
        )


def test_no_hook_is_bound_when_the_provider_writes_to_a_directory(tmp_path: Path) -> None:
    assert bindings(str(tmp_path)) == [None, None, None]


def access_with(settings: dict[str, str]) -> ClusterAccess:
    """stack_config_access with these kubernetes: settings in the stack config."""
    found: list[ClusterAccess] = []

    def build() -> None:
        for key, value in settings.items():
            pulumi.runtime.set_config(f"kubernetes:{key}", value)
        try:
            found.append(stack_config_access())
        finally:
            for key in settings:
                CONFIG.get().pop(f"kubernetes:{key}", None)

    declare_under_mocks(build)
    return found[0]


def test_a_kubeconfig_path_is_used_as_given(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    assert access_with({"kubeconfig": str(path), "context": "team"}) == ClusterAccess(str(path), "team")


def test_kubeconfig_contents_are_read_as_data_and_no_file_is_written() -> None:
    before = set(os.listdir(tempfile.gettempdir()))
    access = access_with({"kubeconfig": "apiVersion: v1\nkind: Config\nclusters: []\n"})
    assert access == ClusterAccess({"apiVersion": "v1", "kind": "Config", "clusters": []}, None)
    assert set(os.listdir(tempfile.gettempdir())) - before == set()


def test_no_setting_leaves_the_choice_to_the_client_as_the_provider_does() -> None:
    assert access_with({}) == ClusterAccess(None, None)


def test_a_kubeconfig_setting_that_is_neither_a_file_nor_a_kubeconfig_fails_the_hook() -> None:
    with pytest.raises(PlanNotConfirmed, match="neither a file nor a kubeconfig"):
        access_with({"kubeconfig": "/no/such/kubeconfig"})


def test_the_namespace_verified_is_the_one_the_engine_reports_the_deployment_in() -> None:
    created = pulumi.ResourceHookArgs(
        "urn",
        "id",
        "chat",
        "kubernetes:apps/v1:Deployment",
        new_outputs={"metadata": {"namespace": "team-a"}},
    )
    assert deployed_namespace(created) == "team-a"


def test_a_deployment_reported_without_a_namespace_fails_the_hook_by_name() -> None:
    with pytest.raises(PlanNotConfirmed, match="no namespace for chat"):
        deployed_namespace(pulumi.ResourceHookArgs("urn", "id", "chat", "kubernetes:apps/v1:Deployment"))
