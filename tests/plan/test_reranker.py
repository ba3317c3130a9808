"""A reranker is planned the way vLLM serves /rerank: a one-label scorer. Qwen3-Reranker, published as a causal LM,
gets the hf_overrides that make vLLM score with its yes/no logits; where that cannot happen, the plan says so at
the reranker's `model` before anything deploys."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from colo.stackfiles import load_stack
from colo.vllm.rerank import QWEN3_RERANKER_OVERRIDES

OVERRIDES = json.dumps(QWEN3_RERANKER_OVERRIDES, separators=(",", ":"))


def plan_dev(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], **reranker: Any
) -> tuple[int, dict[str, Any]]:
    """The dev stack (a reranker beside the LLM and the embedding) with its reranker's keys changed."""
    source = copy.deepcopy(load_stack("dev").values)
    server = source["pairs"][0]["reranker"]
    server.update(reranker)
    path = tmp_path / "Pulumi.rerank.yaml"
    path.write_text(yaml.safe_dump({"config": {f"colo:{k}": v for k, v in source.items()}}))
    code = main(["plan", "--config", str(path), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def reranker_args(plan: dict[str, Any]) -> list[str]:
    (server,) = [s for s in plan["pairs"][0]["servers"] if s["role"] == "reranker"]
    return list(server["vllm_args"])


def test_qwen3_reranker_is_served_as_a_one_label_scorer_through_hf_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, plan = plan_dev(tmp_path, capsys)
    assert code == 0, plan["problems"]
    args = reranker_args(plan)
    start = args.index("--runner")
    assert args[start : start + 4] == ["--runner", "pooling", "--hf-overrides", OVERRIDES]
    assert "--convert" not in args  # a classifier of the config's two labels serves no /rerank


def test_before_the_runner_flag_the_overrides_go_with_the_score_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, plan = plan_dev(tmp_path, capsys, vllm={"version": "0.9.2"})  # --runner exists from 0.10.1
    assert code == 0, plan["problems"]
    args = reranker_args(plan)
    start = args.index("--task")
    assert args[start : start + 4] == ["--task", "score", "--hf-overrides", OVERRIDES]


def test_a_release_that_cannot_score_qwen3_reranker_is_refused_at_its_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, plan = plan_dev(tmp_path, capsys, vllm={"version": "0.9.1"})
    assert code == 1
    (problem,) = [p for p in plan["problems"] if p["path"] == "colo:pairs[0].reranker.model"]
    assert "from 0.9.2" in problem["message"] and "pin vllm.version 0.9.2 or later" in problem["message"]


def test_another_causal_lm_as_the_reranker_is_refused_naming_what_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, plan = plan_dev(tmp_path, capsys, model="Qwen/Qwen2.5-0.5B-Instruct", maxModelLen=4096)
    assert code == 1
    (problem,) = [p for p in plan["problems"] if p["path"] == "colo:pairs[0].reranker.model"]
    assert "is a causal LM (Qwen2ForCausalLM)" in problem["message"]
    assert "ForSequenceClassification" in problem["message"]
