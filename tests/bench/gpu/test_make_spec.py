"""The runner's spec keeps every server exactly as `colo plan --format json` derives it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bench.gpu.make_spec import ENV, HERE, SpecError, build_spec
from tests.bench.gpu.plans import stack_plan


@pytest.fixture(
    scope="session"
)  # session: xdist may interleave other modules, which ends a module's fixtures
def dense_plans() -> dict[str, Any]:
    return {stack: stack_plan(stack) for stack in ("h200-dense", "h200-toolarge", "h200-eager")}


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


@pytest.fixture(scope="module")
def h100_plans() -> dict[str, Any]:
    return {stack: stack_plan(stack) for stack in ("h100-encoder", "h100-hybrid")}


def test_the_h100_run_probes_every_server_and_gives_the_hybrid_its_prefill_kernel_last(
    h100_plans: dict[str, Any],
) -> None:
    run = yaml.safe_load((HERE / "runs" / "h100-issue32.yaml").read_text())
    spec = build_spec(run, h100_plans)
    llm = spec["servers"]["hybrid-llm"]
    assert llm["args"] == _planned_args(h100_plans["h100-hybrid"], "hybrid-llm")  # the plan's, untouched
    assert llm["extra_args"] == ["--gdn-prefill-backend", "triton"]
    assert all(server["probe"] for server in spec["servers"].values())
    assert set(spec["models"]) == {
        "BAAI/bge-m3",
        "Qwen/Qwen3-Embedding-0.6B",
        "Qwen/Qwen3-Reranker-0.6B",
        "Qwen/Qwen3.6-27B-FP8",
    }
    warm = spec["actions"][-1]
    assert (warm["start"], warm["as"]) == ("hybrid-embedding", "hybrid-embedding-warm")


def test_server_options_for_an_unplanned_server_or_an_unknown_key_are_refused(
    dense_plans: dict[str, Any],
) -> None:
    run: dict[str, Any] = {"name": "t", "deadline_s": 60, "actions": []}
    with pytest.raises(SpecError, match="no planned stack"):
        build_spec({**run, "server_options": {"chat-llm": {"probe": True}}}, dense_plans)
    with pytest.raises(SpecError, match="unknown key port"):
        build_spec({**run, "server_options": {"dense-llm": {"port": 1}}}, dense_plans)


def test_the_mps_run_copies_planned_servers_changing_only_port_environment_and_client() -> None:
    run = yaml.safe_load((HERE / "runs" / "mps.yaml").read_text())
    plans = {"h200-mps": stack_plan("h200-mps")}
    spec = build_spec(run, plans)
    assert spec["mps"] is True
    servers = spec["servers"]
    planned = _planned_args(plans["h200-mps"], "mps14-embedding")
    capped = servers["emb-mps25"]
    assert capped["args"] == [*planned[:5], "--port", "8012", *planned[7:]]  # only the port differs
    assert capped["env"] == {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"} and capped["mps_client"] is True
    assert servers["emb-ts"]["mps_client"] is False and servers["emb-ts"]["env"] == {}
    assert capped["stands_for"] == [] and servers["emb-ts"]["stands_for"] == []
    assert servers["emb-mps"]["stands_for"] == ["mps14-embedding", "mps30-embedding"]
    assert servers["mps14-llm-mps"]["stands_for"] == ["mps14-llm"]
    assert servers["mps14-llm-mps"]["args"] == _planned_args(plans["h200-mps"], "mps14-llm")
    assert servers["mps30-llm-ts"]["mps_client"] is False
    assert spec["actions"][0] == {"mps": "start"} and spec["actions"][-1] == {"mps": "stop"}
    ports = {c["server"]: c["port"] for a in spec["actions"] if "load" in a for c in a["load"]["clients"]}
    assert (ports["emb-mps"], ports["emb-mps25"], ports["emb-ts"], ports["mps14-llm-mps"]) == (
        8011,
        8012,
        8013,
        8000,
    )


def test_a_derived_server_must_come_from_a_planned_one_and_stand_only_for_equal_arguments(
    dense_plans: dict[str, Any],
) -> None:
    def run(entry: dict[str, Any]) -> dict[str, Any]:
        return {"name": "t", "deadline_s": 60, "derived": [entry], "actions": []}

    with pytest.raises(SpecError, match="no planned stack has"):
        build_spec(run({"name": "x", "from": "chat-llm"}), dense_plans)
    with pytest.raises(SpecError, match="their planned arguments differ"):
        build_spec(run({"name": "x", "from": "dense-llm", "stands_for": ["eager-llm"]}), dense_plans)
    with pytest.raises(SpecError, match="named like another server"):
        build_spec(run({"name": "dense-llm", "from": "dense-llm"}), dense_plans)


def test_the_cpu_split_run_keeps_the_plans_arguments_but_for_the_measured_companions_batch() -> None:
    run = yaml.safe_load((HERE / "runs" / "mps-h100-cpus.yaml").read_text())
    plans = {"h100-mps": stack_plan("h100-mps")}
    spec = build_spec(run, plans)
    servers = spec["servers"]
    planned = _planned_args(plans["h100-mps"], "mps14-embedding")
    batched = servers["emb-mps10-mbt512"]
    flag = batched["args"].index("--max-num-batched-tokens")
    assert batched["args"][flag + 1] == "512" and planned[flag + 1] == "8192"
    assert [a for i, a in enumerate(batched["args"]) if i not in (flag + 1, planned.index("--port") + 1)] == [
        a for i, a in enumerate(planned) if i not in (flag + 1, planned.index("--port") + 1)
    ]
    assert batched["stands_for"] == [] and batched["cpus"] == "cores:12-15"
    assert servers["mps14-llm-mps"]["args"] == _planned_args(plans["h100-mps"], "mps14-llm")
    assert "cpus" not in servers["mps14-llm-mps"]  # started on every CPU; the run splits it mid-run
    assert {"pin": "runner", "cpus": "cores:10-11"} in spec["actions"]


def test_a_copy_that_changes_an_argument_cannot_stand_for_a_plan_nor_change_one_the_plan_lacks(
    dense_plans: dict[str, Any],
) -> None:
    def run(entry: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": "t",
            "deadline_s": 60,
            "derived": [{"name": "x", "from": "dense-llm", **entry}],
            "actions": [],
        }

    changed = {"set_args": {"--max-num-seqs": "8"}}
    with pytest.raises(SpecError, match="cannot stand for a planned server"):
        build_spec(run({**changed, "stands_for": ["dense-llm"]}), dense_plans)
    with pytest.raises(SpecError, match="--kv-cache-dtype is not among the planned arguments"):
        build_spec(run({"set_args": {"--kv-cache-dtype": "fp8"}}), dense_plans)
