from __future__ import annotations

import json

import pytest

from colo.cli import main


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
