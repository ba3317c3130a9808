"""colo deploys through a stack's context only while it reaches the API server the stack names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cluster.identity import check_cluster_identity, same_server
from colo.cluster.kubeconfig import KubeconfigProblem, context_server
from colo.config.cluster_target import KubeconfigCluster
from colo.errors import ConfigError


def kubeconfig(path: Path, servers: dict[str, str], current: str | None = None) -> Path:
    """A kubeconfig with one context per entry (context name -> its cluster's server)."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": f"{name}-cluster", "cluster": {"server": url}} for name, url in servers.items()
        ],
        "contexts": [
            {"name": name, "context": {"cluster": f"{name}-cluster", "user": "me"}} for name in servers
        ],
        "users": [{"name": "me", "user": {"token": "t"}}],
    }
    if current:
        body["current-context"] = current
    path.write_text(yaml.safe_dump(body))
    return path


def test_the_named_context_is_used_never_the_current_one(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config", {"prod": "https://prod:6443", "staging": "https://stage:6443"}, "staging"
    )
    found = check_cluster_identity(KubeconfigCluster("prod", "https://prod:6443", str(path)))
    assert found.server == "https://prod:6443"


def test_a_context_that_reaches_another_server_is_refused_naming_both_servers(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"prod": "https://stage:6443"})
    with pytest.raises(ConfigError) as caught:
        check_cluster_identity(KubeconfigCluster("prod", "https://prod:6443", str(path)))
    (problem,) = caught.value.problems
    assert problem.path == "colo:cluster.apiServer"
    assert "deploys to https://prod:6443, but context prod" in problem.message
    assert "reaches https://stage:6443" in problem.message


def test_a_missing_context_is_refused_at_its_key_listing_the_contexts_there(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {"staging": "https://stage:6443", "dev": "https://dev"})
    with pytest.raises(ConfigError) as caught:
        check_cluster_identity(KubeconfigCluster("prod", "https://prod:6443", str(path)))
    (problem,) = caught.value.problems
    assert problem.path == "colo:cluster.kubeconfigContext"
    assert "no context named prod (its contexts: dev, staging)" in problem.message


def test_a_missing_kubeconfig_is_refused_at_the_context_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no kubeconfig file at"):
        check_cluster_identity(KubeconfigCluster("prod", "https://prod", str(tmp_path / "absent")))


def test_without_a_file_named_kubeconfigs_list_is_read_and_the_first_definition_wins(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "a", {"prod": "https://prod-a"})
    second = kubeconfig(tmp_path / "b", {"prod": "https://prod-b", "dev": "https://dev"})
    environ = {"KUBECONFIG": f"{first}:{second}"}
    assert context_server(None, "prod", environ).server == "https://prod-a"
    assert context_server(None, "dev", environ).server == "https://dev"


def test_a_context_whose_cluster_has_no_server_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump({"contexts": [{"name": "x", "context": {"cluster": "gone"}}], "clusters": []})
    )
    with pytest.raises(KubeconfigProblem, match="names cluster gone, which has no server"):
        context_server(str(path), "x")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://Prod.example:443", "https://prod.example"),
        ("https://10.0.0.1:6443/", "https://10.0.0.1:6443"),
        ("HTTPS://10.0.0.1:6443/k8s/clusters/c-1", "https://10.0.0.1:6443/k8s/clusters/c-1/"),
    ],
)
def test_spellings_of_one_server_are_the_same_server(a: str, b: str) -> None:
    assert same_server(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://10.0.0.1:6443", "https://10.0.0.1:6444"),
        ("https://10.0.0.1", "http://10.0.0.1"),
        ("https://rancher/k8s/clusters/c-1", "https://rancher/k8s/clusters/c-2"),
    ],
)
def test_other_servers_are_other_servers(a: str, b: str) -> None:
    assert not same_server(a, b)
