"""Every stack names its cluster: a managed stack its EKS cluster, a stack on existing nodes a kubeconfig
context and the API server that context must reach; a missing or unread key is refused by name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.config.cluster_target import EksCluster, KubeconfigCluster, cluster_target
from colo.errors import ConfigError
from colo.stackfiles import load_stack


def stack(name: str, **cluster: Any) -> dict[str, Any]:
    raw = copy.deepcopy(load_stack(name).values)
    raw["cluster"].update(cluster)
    return {key: value for key, value in raw.items() if key != "hfToken"}


def refusal(raw: dict[str, Any], **facts: Any) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        cluster_target(parse_stack_config(raw, **facts))
    return {problem.path: problem.message for problem in caught.value.problems}


def test_a_managed_stack_reaches_its_eks_cluster_with_the_stacks_region_and_profile() -> None:
    config = parse_stack_config(stack("prod"), aws_region="us-east-1", aws_profile="colo-admin")
    assert cluster_target(config) == EksCluster("colo-prod", "us-east-1", "colo-admin")


def test_a_stack_on_existing_nodes_goes_through_the_context_and_server_it_names() -> None:
    raw = stack("local", kubeconfig="~/.kube/team")
    assert cluster_target(parse_stack_config(raw)) == KubeconfigCluster(
        "kind-colo", "https://127.0.0.1:6443", "~/.kube/team"
    )


def test_a_stack_on_existing_nodes_without_a_context_or_server_is_refused_naming_both_keys() -> None:
    raw = stack("local")
    del raw["cluster"]["kubeconfigContext"], raw["cluster"]["apiServer"]
    problems = refusal(raw)
    assert set(problems) == {"colo:cluster.kubeconfigContext", "colo:cluster.apiServer"}
    assert "never deploys to whichever context is current" in problems["colo:cluster.kubeconfigContext"]
    assert "kubectl config view --minify" in problems["colo:cluster.apiServer"]


def test_a_managed_stack_naming_a_context_is_refused_because_it_would_not_be_read() -> None:
    problems = refusal(stack("prod", kubeconfigContext="prod", apiServer="https://10.0.0.1"))
    assert set(problems) == {"colo:cluster.kubeconfigContext", "colo:cluster.apiServer"}
    assert "not read with nodePool.mode: managed" in problems["colo:cluster.apiServer"]


@pytest.mark.parametrize(
    "server",
    ["127.0.0.1:6443", "ftp://10.0.0.1", "https://", "https://user:pw@10.0.0.1", "https://10.0.0.1/?a=b"],
)
def test_an_api_server_that_is_no_url_is_refused_at_its_key(server: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(stack("local", apiServer=server))
    (problem,) = caught.value.problems
    assert problem.path == "colo:cluster.apiServer"
    assert "https://127.0.0.1:6443" in problem.message
