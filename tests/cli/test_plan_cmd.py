from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from tests.stack_edits import edited_local_stack


def test_plan_shows_which_pair_runs_on_which_node_and_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert "1 node(s) of g6e.12xlarge x 4 GPU" in out
    assert "pair qwen27b -> node 0 GPU 0" in out
    assert "pair qwen35b-moe -> node 0 GPU 1" in out
    assert "pair gemma31b -> node 0 GPU 2" in out


def test_plan_json_carries_the_node_count_and_each_placement(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "prod", "--format", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["node_pool"]["node_count"] == 1
    assert [(p["name"], p["node"], p["gpu"]) for p in view["pairs"]] == [
        ("qwen27b", 0, 0),
        ("qwen35b-moe", 0, 1),
        ("gemma31b", 0, 2),
    ]


def _h100_pool_without_instance_type(config: dict[str, Any]) -> None:
    pool = config["colo:nodePool"]
    del pool["instanceType"]
    pool["gpu"] = "H100-SXM"


def _existing_pool_without_instance_type(tmp_path: Path) -> Path:
    return edited_local_stack(tmp_path, _h100_pool_without_instance_type, "h100-existing")


def test_plan_names_no_instance_type_for_an_existing_pool_that_gave_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The schema's default instance type carries L40S GPUs; an existing pool of H100 nodes that names no instance
    type must not be printed as g6e.xlarge nodes."""
    config = _existing_pool_without_instance_type(tmp_path)
    assert main(["plan", "--config", str(config)]) == 0
    headline = capsys.readouterr().out.splitlines()[0]
    assert "g6e" not in headline
    assert "1 node(s) x 1 GPU (no instance type named)" in headline
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["node_pool"]["instance_type"] is None


def test_an_existing_pool_that_names_neither_instance_type_nor_gpu_count_is_told_the_plan_assumes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _existing_pool_without_instance_type(tmp_path)
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    warnings = {w["path"]: w["message"] for w in json.loads(capsys.readouterr().out)["warnings"]}
    assert "assumes 1 GPU per node" in warnings["colo:nodePool.gpusPerNode"]
    stack = yaml.safe_load(config.read_text())
    stack["config"]["colo:nodePool"]["gpusPerNode"] = 1  # time-slice (the local stack) takes one-GPU nodes
    config.write_text(yaml.safe_dump(stack))
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    assert "colo:nodePool.gpusPerNode" not in {
        w["path"] for w in json.loads(capsys.readouterr().out)["warnings"]
    }
