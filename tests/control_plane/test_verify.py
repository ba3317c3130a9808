"""`colo verify --stack` through a real API server: kwok serves each server's startup log as its kubelet would,
the API server relays it, and verify's cluster path reads it with the `kubernetes` client.

The stack is tests/verify's: one pair on an A100-40GB node, planned as the public vLLM 0.15.1 log's run was.
A pod's /metrics would come through the API server's service proxy, answered by the egress proxy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from colo.cli import main
from tests.control_plane.api import Api, wait_until
from tests.control_plane.cluster import ControlPlane
from tests.control_plane.nodes import P4D_24XLARGE
from tests.control_plane.stacks import POOL_LABEL, StackOnCluster, StackSetup, bring_up, remove
from tests.control_plane.workloads import available, wait_for_pair_pods
from tests.verify.conftest import write_stack

pytestmark = [pytest.mark.control_plane, pytest.mark.xdist_group("control-plane")]


def a100_setup(directory: Path, name: str = "a100", **budget: object) -> StackSetup:
    # The stack of tests/verify, with the safety margin its plan leaves (422 MiB) allowed, so colo deploys it.
    stack_file = write_stack(directory, name, safetyMarginMiB=256, **budget)
    return StackSetup(name, stack_file, P4D_24XLARGE, 1, "whole", {POOL_LABEL: "colo"}, "gp3", "500Gi")


@pytest.fixture(scope="module")
def a100(api: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackOnCluster]:
    directory = tmp_path_factory.mktemp("a100")
    stack = bring_up(api, a100_setup(directory), directory / "render")
    try:
        assert stack.applied.refused == []
        wait_until(lambda: available(api, "colo", "chat"), 90, "the pair Available")
        yield stack
    finally:
        remove(api, stack)


def test_verify_reads_each_servers_log_from_the_current_pod_and_finds_the_plan_within(
    api: Api, control_plane: ControlPlane, a100: StackOnCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    ((pod,),) = wait_for_pair_pods(api, a100).values()
    capsys.readouterr()
    code = main(
        [
            "verify",
            "--config",
            str(a100.setup.stack_file),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--format",
            "json",
        ]
    )
    view = json.loads(capsys.readouterr().out)
    assert (code, view["verdict"]) == (0, "within"), json.dumps(view, indent=1)[:3000]
    servers = {s["server"]: s for s in view["servers"]}
    name = pod["metadata"]["name"]
    assert servers["chat-llm"]["source"] == f"colo/{name} container llm"
    assert servers["chat-embedding"]["source"] == f"colo/{name} container embedding"
    assert all(server["verdict"] == "within" for server in servers.values())


def test_verify_reads_the_llms_metrics_through_the_service_proxy(
    control_plane: ControlPlane, a100: StackOnCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    main(
        [
            "verify",
            "--config",
            str(a100.setup.stack_file),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--format",
            "json",
        ]
    )
    view = json.loads(capsys.readouterr().out)
    (llm,) = [s for s in view["servers"] if s["server"] == "chat-llm"]
    terms = {t["term"]: t for t in llm["terms"]}
    assert terms["num_gpu_blocks"]["observed"] == 9871  # the egress proxy's answer for port 8000


def test_verify_says_the_plan_was_wrong_when_the_stack_no_longer_matches_what_ran(
    control_plane: ControlPlane, a100: StackOnCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same pods, held against a stack whose LLM would be started at another utilization."""
    other = write_stack(tmp_path, "a100", safetyMarginMiB=256)
    text = other.read_text().replace("gpuMemoryUtilization: 0.9", "gpuMemoryUtilization: 0.85")
    other.write_text(text)
    capsys.readouterr()
    code = main(
        ["verify", "--config", str(other), "--kubeconfig", str(control_plane.kubeconfig), "--format", "json"]
    )
    view = json.loads(capsys.readouterr().out)
    assert (code, view["verdict"]) == (1, "plan_wrong")
    (llm,) = [s for s in view["servers"] if s["server"] == "chat-llm"]
    assert (llm["verdict"], llm["first_off"]) == ("plan_wrong", "kv_pool")


def test_verify_reads_the_gpu_from_the_nodes_feature_discovery_labels(
    control_plane: ControlPlane, a100: StackOnCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    calibration = tmp_path / "calibration.yaml"
    main(
        [
            "verify",
            "--config",
            str(a100.setup.stack_file),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--record",
            str(calibration),
        ]
    )
    capsys.readouterr()
    (entry,) = yaml.safe_load(calibration.read_text())["calibrations"]
    (embedder,) = entry["observed"]
    assert (embedder["gpu_name"], embedder["driver"]) == ("NVIDIA-A100-SXM4-40GB", "580.95.05")
