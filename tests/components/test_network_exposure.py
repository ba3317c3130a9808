"""Who can reach the vLLM servers: a NetworkPolicy per pair admits only the serving ports and only the
sources the stack names (its own namespace by default), and an API key from a Pulumi secret guards the
OpenAI API while probes keep working."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from colo.cli import main
from colo.cli.common import load_config
from colo.components.containers import API_KEY_GUARDED_PREFIXES, HEALTH_PATH
from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.mock_run import ProgramRun, Recorded
from colo.plan.stack import make_plan
from colo.render import SECRET_PLACEHOLDER, plain
from colo.stackfiles import load_stack
from tests.components.stacks import (
    DEPLOYMENT,
    containers_in_start_order,
    env_of,
    pod_spec,
    variant,
)
from tests.paths import REPO_ROOT

POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def _policies(run: ProgramRun, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        p.inputs["metadata"]["name"]: plain(p.inputs)
        for p in run.mocks.of_type(POLICY)
        if p.inputs["metadata"]["namespace"] == namespace
    }


def _servers(deployment: Recorded) -> list[dict[str, Any]]:
    return [c for c in containers_in_start_order(pod_spec(deployment.inputs)) if c.get("ports")]


def test_every_pair_admits_only_its_serving_ports_and_by_default_only_its_own_namespace(
    stack_name: str, checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    run = checked_in_run(stack_name, False)
    namespace = load_stack(stack_name).values["cluster"]["namespace"]
    policies = _policies(run, namespace)
    deployments = run.mocks.of_type(DEPLOYMENT)
    assert sorted(policies) == sorted(d.inputs["metadata"]["name"] for d in deployments)
    for deployment in deployments:
        policy = policies[deployment.inputs["metadata"]["name"]]["spec"]
        assert policy["podSelector"] == plain(deployment.inputs["spec"]["selector"])
        assert policy["policyTypes"] == ["Ingress"]
        (rule,) = policy["ingress"]
        ports = sorted(c["ports"][0]["containerPort"] for c in _servers(deployment))
        assert sorted(p["port"] for p in rule["ports"]) == ports
        assert {p["protocol"] for p in rule["ports"]} == {"TCP"}
        # every pod of the policy's own namespace, and Prometheus where the stack names it (prod only)
        assert rule["from"][0] == {"podSelector": {}}
        assert len(rule["from"]) == 1 + len(
            load_stack(stack_name).values.get("network", {}).get("scrapeFrom", [])
        )


def test_the_stack_names_the_namespaces_and_pods_that_may_call_the_servers(
    run_variant: Callable[..., ProgramRun],
) -> None:
    sources = [
        {"namespace": "gateway"},
        {"podLabels": {"app": "rag-api"}},
        {"namespace": "*", "podLabels": {"role": "evaluator"}},
    ]
    run = run_variant(variant("local", network={"allowFrom": sources}))
    (rule,) = _policies(run, "colo")["chat"]["spec"]["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}},
        {"podSelector": {"matchLabels": {"app": "rag-api"}}},
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "evaluator"}}},
    ]


def test_an_empty_allow_list_is_refused_rather_than_shutting_every_client_out() -> None:
    raw = {**load_stack("local").values, "network": {"allowFrom": []}}
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    (problem,) = caught.value.problems
    assert problem.path == "colo:network.allowFrom"
    assert "omit allowFrom" in problem.message


def test_the_device_plugin_pods_admit_no_ingress(checked_in_run: Callable[[str, bool], ProgramRun]) -> None:
    run = checked_in_run("local", False)
    policy = _policies(run, "colo-nvidia-device-plugin")["nvidia-device-plugin-deny-ingress"]["spec"]
    (daemon_set,) = run.mocks.of_type("kubernetes:apps/v1:DaemonSet")
    assert policy == {
        "podSelector": plain(daemon_set.inputs["spec"]["selector"]),
        "policyTypes": ["Ingress"],
    }


def test_prometheus_where_scrape_from_names_it_reaches_the_servers_and_the_dcgm_exporter_only(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("prod", False)
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    (rule,) = _policies(run, "colo")["qwen27b"]["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {}}, monitoring]
    exporter = _policies(run, "colo-nvidia-device-plugin")["dcgm-exporter"]["spec"]
    (rule,) = exporter["ingress"]
    assert rule == {"from": [monitoring], "ports": [{"port": 9400, "protocol": "TCP"}]}


def test_without_scrape_from_the_dcgm_exporter_admits_nothing_and_the_plan_says_so(
    run_variant: Callable[..., ProgramRun],
) -> None:
    stack_file = variant("prod", network={"scrapeFrom": []})
    exporter = _policies(run_variant(stack_file), "colo-nvidia-device-plugin")["dcgm-exporter"]["spec"]
    assert "ingress" not in exporter  # no rule at all: a rule with an empty `from` would admit everyone
    assert exporter["policyTypes"] == ["Ingress"]
    warnings = {w.path: w.message for w in make_plan(load_config(stack_file)).warnings}
    assert "scrapeFrom: [{namespace: monitoring}]" in warnings["colo:network.scrapeFrom"]


def test_the_api_key_reaches_every_server_from_a_pulumi_secret_through_a_kubernetes_secret(
    run_variant: Callable[..., ProgramRun],
) -> None:
    run = run_variant(variant("dev", secret_api_key=True))
    (secret,) = [s for s in run.mocks.of_type("kubernetes:core/v1:Secret")]
    assert secret.inputs["metadata"]["name"] == "vllm-api-key"
    assert plain(secret.inputs)["stringData"] == {"token": SECRET_PLACEHOLDER}  # a secret output
    (deployment,) = run.mocks.of_type(DEPLOYMENT)
    servers = _servers(deployment)
    assert len(servers) == 3
    for server in servers:
        reference = env_of(server)["VLLM_API_KEY"]
        assert plain(reference) == {"secretKeyRef": {"key": "token", "name": "vllm-api-key"}}
        assert "--api-key" not in server["args"]  # never on the command line, where ps and logs show it
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert server[probe]["httpGet"]["path"] == HEALTH_PATH
            assert "httpHeaders" not in server[probe]["httpGet"]


def test_probes_call_a_path_vllm_never_asks_the_api_key_for() -> None:
    assert not HEALTH_PATH.startswith(API_KEY_GUARDED_PREFIXES)


def test_an_api_key_in_plain_text_is_refused_with_the_secret_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.plain.yaml"
    stack.write_text(
        (REPO_ROOT / "stacks" / "Pulumi.local.yaml").read_text() + "  colo:vllmApiKey: sk-plain\n"
    )
    assert main(["plan", "--config", str(stack)]) == 2
    err = capsys.readouterr().err
    assert "colo:vllmApiKey: is stored in plain text" in err
    assert "pulumi config set --secret vllmApiKey" in err
    assert "sk-plain" not in err


def test_pods_that_read_secrets_from_the_environment_carry_the_documented_scanner_exception(
    run_variant: Callable[..., ProgramRun], checked_in_run: Callable[[str, bool], ProgramRun]
) -> None:
    (plain_pod,) = checked_in_run("local", False).mocks.of_type(DEPLOYMENT)
    assert "annotations" not in plain_pod.inputs["metadata"]
    (deployment,) = run_variant(variant("local", secret_token=True, secret_api_key=True)).mocks.of_type(
        DEPLOYMENT
    )
    assert deployment.inputs["metadata"]["annotations"]["checkov.io/skip1"].startswith("CKV_K8S_35=")
    assert "CKV_K8S_35" in (REPO_ROOT / "docs" / "checkov.md").read_text()
