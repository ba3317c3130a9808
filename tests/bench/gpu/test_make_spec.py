"""The runner's spec keeps every server exactly as `colo plan --format json` derives it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bench.gpu.make_spec import ENV, HERE, SpecError, build_spec, plan_json

# the three stacks' plans (a subprocess each) are made once, on one worker
pytestmark = pytest.mark.xdist_group("make-spec")


@pytest.fixture(
    scope="session"
)  # session: xdist may interleave other modules, which ends a module's fixtures
def dense_plans() -> dict[str, Any]:
    return {stack: plan_json(stack) for stack in ("h200-dense", "h200-toolarge", "h200-eager")}


def _planned_args(plan: dict[str, Any], name: str) -> list[str]:
    servers = [s for pair in plan["pairs"] for s in pair["servers"]]
    (server,) = [s for s in servers if s["name"] == name]
    return list(server["vllm_args"])


def test_the_dense_run_keeps_the_plans_arguments_in_order(dense_plans: dict[str, Any]) -> None:
    run = yaml.safe_load((HERE / "runs" / "dense.yaml").read_text())
    spec = build_spec(run, dense_plans)
    assert spec["servers"]["dense-llm"]["args"] == _planned_args(dense_plans["h200-dense"], "dense-llm")
    assert spec["servers"]["eager-llm"]["args"][-1] == "--enforce-eager"
    assert spec["extra_args"] == ["--load-format", "dummy"]
    assert spec["env"]["VLLM_USE_FLASHINFER_SAMPLER"] == ENV["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
    assert spec["servers"]["dense-embedding"]["stands_for"] == [
        "dense-embedding",
        "toolarge-embedding",
        "eager-embedding",
    ]
    assert set(spec["models"]) == {"Qwen/Qwen3-32B", "Qwen/Qwen3-Embedding-0.6B"}


def test_the_too_large_utilization_is_planned_as_refused(dense_plans: dict[str, Any]) -> None:
    plan = dense_plans["h200-toolarge"]
    assert plan["feasible"] is False
    assert "--gpu-memory-utilization" in _planned_args(plan, "toolarge-llm")
    assert "0.97" in _planned_args(plan, "toolarge-llm")


def test_load_clients_are_addressed_at_the_planned_port_and_served_name(dense_plans: dict[str, Any]) -> None:
    run = {
        "name": "t",
        "deadline_s": 60,
        "actions": [
            {"start": "dense-embedding"},
            {
                "load": {
                    "label": "x",
                    "clients": [{"server": "dense-embedding", "kind": "embeddings", "concurrency": 1}],
                }
            },
        ],
    }
    (client,) = build_spec(run, dense_plans)["actions"][1]["load"]["clients"]
    assert (client["port"], client["model"]) == (8001, "Qwen/Qwen3-Embedding-0.6B")


def test_a_process_cannot_stand_for_a_server_planned_with_other_arguments(
    dense_plans: dict[str, Any],
) -> None:
    run = {"name": "t", "deadline_s": 60, "actions": [{"start": "dense-llm", "same_as": ["eager-llm"]}]}
    with pytest.raises(SpecError, match="their planned arguments differ"):
        build_spec(run, dense_plans)


def test_a_server_no_plan_has_is_refused(dense_plans: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="no planned stack"):
        build_spec({"name": "t", "deadline_s": 60, "actions": [{"start": "chat-llm"}]}, dense_plans)
