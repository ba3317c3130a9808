"""`colo plan` on a Karpenter or EKS Auto Mode stack: what each mode will launch, in words and in JSON."""

from __future__ import annotations

import json

import pytest

from colo.cli import main
from colo.cli.common import ExitCode
from tests.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "capacity"


def test_the_karpenter_example_shows_its_node_pool_candidates_limits_and_node_class(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--config", str(EXAMPLES / "Pulumi.karpenter.yaml")]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        "Karpenter 1.14.1 launches NodePool colo-gpu: one of g6e.xlarge, g6e.2xlarge, g6e.4xlarge, g6e.8xlarge, "
        "g6e.16xlarge (1 x L40S each), on demand, at most 2 node(s) / 2 GPUs; EC2NodeClass colo-gpu, 100 GiB for "
        "images and weights"
    )
    assert lines[2] == "EC2NodeClass colo-gpu: AMI alias al2023@latest, node role KarpenterNodeRole-colo-gpu"


def test_the_auto_mode_example_names_its_node_class_and_the_disk_the_pairs_need(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["plan", "--config", str(EXAMPLES / "Pulumi.auto-mode.yaml"), "--format", "json"]) == ExitCode.OK
    )
    capacity = json.loads(capsys.readouterr().out)["node_pool"]["capacity"]
    assert capacity["mode"] == "auto"
    assert capacity["node_class"] == {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
    assert capacity["disk_gib"] <= 80  # what the built-in NodeClass gives a node
    assert capacity["ami_alias"] is None and capacity["node_role"] is None


def test_a_stack_on_existing_nodes_shows_no_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "local", "--format", "json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["node_pool"]["capacity"] is None
