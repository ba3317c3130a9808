"""Observability objects: scraping (PodMonitor or annotations), alerts, the dashboard and the DCGM exporter,
rendered from the checked-in stacks and validated against the Prometheus operator's own CRD schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from colo.cli import main
from colo.cli.common import load_config
from colo.components.dcgm_exporter import IMAGE
from colo.config.load import parse_stack_config
from colo.plan.stack import make_plan
from colo.render import APPLY_DIR
from colo.stackfiles import load_stack
from tests.components.crd_schemas import assert_valid_custom_resource


def _render(tmp_path: Path, stack: str, **config: Any) -> dict[tuple[str, str], dict[str, Any]]:
    source = yaml.safe_load(Path(f"stacks/Pulumi.{stack}.yaml").read_text())
    for key, value in config.items():
        if value is None:
            source["config"].pop(key, None)
        elif isinstance(value, dict) and isinstance(source["config"].get(key), dict):
            source["config"][key] = {**source["config"][key], **value}
        else:
            source["config"][key] = value
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"Pulumi.{stack}-edit.yaml"
    path.write_text(yaml.safe_dump(source))
    out = tmp_path / "out"
    assert main(["render", "--config", str(path), "--out", str(out)]) == 0
    objects = [yaml.safe_load(p.read_text()) for p in (out / APPLY_DIR).glob("*.yaml")]
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    return _render(tmp_path_factory.mktemp("prod"), "prod")


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    return _render(tmp_path_factory.mktemp("local"), "local")


def _container_ports(deployment: dict[str, Any]) -> set[str]:
    spec = deployment["spec"]["template"]["spec"]
    containers = spec["containers"] + spec.get("initContainers", [])
    return {port["name"] for c in containers for port in c.get("ports", [])}


def test_with_the_operator_a_pod_monitor_scrapes_every_server_port_of_the_pairs(
    prod: dict[tuple[str, str], dict[str, Any]],
) -> None:
    monitor = prod[("PodMonitor", "colo-prod-vllm")]
    assert_valid_custom_resource(monitor)
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    ports = {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]}
    deployments = [o for (kind, _), o in prod.items() if kind == "Deployment"]
    for deployment in deployments:
        assert ports == _container_ports(deployment) - {"metrics"}
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert "annotations" not in deployment["spec"]["template"]["metadata"]


def test_a_field_the_crd_does_not_know_is_rejected(prod: dict[tuple[str, str], dict[str, Any]]) -> None:
    monitor = json.loads(json.dumps(prod[("PodMonitor", "colo-prod-vllm")]))
    monitor["spec"]["podMetricsEndpoints"][0]["prot"] = "llm"
    with pytest.raises(jsonschema.ValidationError, match="prot"):
        assert_valid_custom_resource(monitor)


def test_alerts_cover_kv_cache_preemptions_restarts_and_gpu_memory_above_the_plan(
    prod: dict[tuple[str, str], dict[str, Any]],
) -> None:
    rule = prod[("PrometheusRule", "colo-prod-alerts")]
    assert_valid_custom_resource(rule)
    rules = {
        r["alert"]: r
        for group in rule["spec"]["groups"]
        for r in group["rules"]
        if r["alert"] != "ColoGpuMemoryAbovePlan"
    }
    kv = rules["ColoKvCacheNearlyFull"]
    assert kv["expr"].endswith("> 0.9") and kv["for"] == "10m" and "vllm:kv_cache_usage_perc" in kv["expr"]
    assert "vllm:num_preemptions_total" in rules["ColoPreemptions"]["expr"]
    assert 'container=~"embedding|llm"' in rules["ColoServerRestarted"]["expr"]
    plan = make_plan(load_config(load_stack("prod")))
    gpu_rules = {
        r["labels"]["pair"]: r
        for group in rule["spec"]["groups"]
        for r in group["rules"]
        if "pair" in r["labels"]
    }
    assert set(gpu_rules) == {p.name for p in plan.pairs}
    for pair in plan.pairs:
        limit = round(pair.gpu_plan.used_bytes / 2**20) + round(pair.gpu_plan.safety_margin_bytes / 2**20)
        assert gpu_rules[pair.name]["expr"].endswith(f"> {limit}")
        assert f'pod=~"{pair.name}-[a-z0-9]+-[a-z0-9]+"' in gpu_rules[pair.name]["expr"]


def test_the_dashboard_shows_each_server_and_gpu_memory_beside_the_plan(
    prod: dict[tuple[str, str], dict[str, Any]],
) -> None:
    config_map = prod[("ConfigMap", "colo-prod-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (text,) = config_map["data"].values()
    board = json.loads(text)
    exprs = {p["title"]: [t["expr"] for t in p["targets"]] for p in board["panels"]}
    joined = " ".join(e for targets in exprs.values() for e in targets)
    for metric in (
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_preemptions_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:request_time_per_output_token_seconds_bucket",
        "vllm:time_per_output_token_seconds_bucket",
        "DCGM_FI_DEV_FB_USED",
    ):
        assert metric in joined
    plan = make_plan(load_config(load_stack("prod")))
    memory = exprs["GPU memory used vs plan (MiB)"]
    for pair in plan.pairs:
        assert f"vector({round(pair.gpu_plan.used_bytes / 2**20)})" in memory


def test_without_the_operator_pods_carry_scrape_annotations_and_no_crd_is_declared(
    local: dict[tuple[str, str], dict[str, Any]],
) -> None:
    kinds = {kind for kind, _ in local}
    assert not kinds & {"PodMonitor", "PrometheusRule"}
    (deployment,) = [o for (kind, _), o in local.items() if kind == "Deployment"]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"prometheus.io/scrape": "true", "prometheus.io/path": "/metrics"}
    assert ("ConfigMap", "colo-dashboard") in local


def test_the_dcgm_exporter_runs_beside_colos_device_plugin_pinned_and_scraped(
    prod: dict[tuple[str, str], dict[str, Any]],
) -> None:
    exporter = prod[("DaemonSet", "dcgm-exporter")]
    plugin = prod[("DaemonSet", "nvidia-device-plugin")]
    assert exporter["metadata"]["namespace"] == plugin["metadata"]["namespace"]
    pod = exporter["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == plugin["spec"]["template"]["spec"]["nodeSelector"]
    (container,) = pod["containers"]
    assert container["image"] == IMAGE and ":" in IMAGE and not IMAGE.endswith(":latest")
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    monitor = prod[("PodMonitor", "dcgm-exporter")]
    assert_valid_custom_resource(monitor)
    assert (
        monitor["spec"]["selector"]["matchLabels"].items()
        <= exporter["spec"]["template"]["metadata"]["labels"].items()
    )


def test_time_sliced_gpus_are_attributed_to_their_pods(tmp_path: Path) -> None:
    objects = _render(tmp_path, "local", **{"colo:observability": {"dcgmExporter": True}})
    (container,) = objects[("DaemonSet", "dcgm-exporter")]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_RESOURCE_NAMES"] == "nvidia.com/gpu.shared"
    annotations = objects[("DaemonSet", "dcgm-exporter")]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"


def test_where_the_gpu_operator_runs_the_exporter_colo_skips_its_own_and_says_so(tmp_path: Path) -> None:
    raw = dict(load_stack("prod").values)
    raw["cluster"] = {**raw["cluster"], "nodeImage": "gpu-operator-cdi", "gpuPairing": "dra"}
    plan = make_plan(parse_stack_config(raw))
    assert plan.device_plugin is None
    (warning,) = [w for w in plan.warnings if w.path == "colo:observability.dcgmExporter"]
    assert "the GPU operator deploys its own DCGM exporter" in warning.message


def test_the_dashboard_can_go_to_grafanas_namespace_or_be_left_out(tmp_path: Path) -> None:
    moved = _render(
        tmp_path / "moved", "local", **{"colo:observability": {"dashboardNamespace": "monitoring"}}
    )
    assert moved[("ConfigMap", "colo-dashboard")]["metadata"]["namespace"] == "monitoring"
    none = _render(tmp_path / "none", "local", **{"colo:observability": {"grafanaDashboard": False}})
    assert ("ConfigMap", "colo-dashboard") not in none
