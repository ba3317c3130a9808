from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import StackConfig, parse_stack_config
from colo.plan.probes import IMAGE_PULL_S
from colo.plan.stack import make_plan
from colo.plan.weight_sync_step import weight_sync_step
from colo.stackfiles import load_stack

URI = "s3://models/qwen3-8b/"
SYNC_IMAGE = "registry.example/colo-sync:0.1.0"


def _with_llm_weights_in_s3(region: str | None = "us-east-1", **storage: Any) -> StackConfig:
    raw = copy.deepcopy(load_stack("dev").values)
    raw["pairs"][0]["llm"]["weightsUri"] = URI
    raw["storage"] = {**raw["storage"], "syncImage": SYNC_IMAGE, **storage}
    return parse_stack_config(raw, aws_region=region)


def test_the_sync_step_fills_the_directory_the_server_loads() -> None:
    config = _with_llm_weights_in_s3()
    pair = make_plan(config).pairs[0]
    step = weight_sync_step(pair.name, pair.llm, config)
    assert step is not None
    assert step.image == SYNC_IMAGE
    assert step.command == ("python", "-m", "colo.aws.weight_sync")
    assert step.args == (URI, "/models/rag/llm")
    assert step.target in pair.llm.args  # vLLM's model argument is the synced directory
    assert step.ready_file == "/models/rag/llm/.colo-complete"
    assert step.mount_path == "/models"
    assert step.env["AWS_REGION"] == "us-east-1"
    assert step.name == "sync-rag-llm"
    assert pair.weight_syncs == (step,)


def test_servers_loading_from_the_hub_need_no_sync_step() -> None:
    config = _with_llm_weights_in_s3()
    pair = make_plan(config).pairs[0]
    embedding = next(s for s in pair.servers if s.role == "embedding")
    assert weight_sync_step(pair.name, embedding, config) is None
    assert [step.name for step in pair.weight_syncs] == ["sync-rag-llm"]


def test_without_a_region_the_sdk_default_is_left_alone() -> None:
    config = _with_llm_weights_in_s3(region=None)
    pair = make_plan(config).pairs[0]
    step = weight_sync_step(pair.name, pair.llm, config)
    assert step is not None
    assert "AWS_REGION" not in step.env


def test_the_copy_moves_from_the_startup_probe_into_the_rollout_timeout() -> None:
    hub = make_plan(parse_stack_config(load_stack("dev").values)).pairs[0]
    synced = make_plan(_with_llm_weights_in_s3()).pairs[0]
    assert hub.llm.probe.breakdown["download_weights"] > 0
    assert synced.llm.probe.breakdown["download_weights"] == 0
    assert synced.llm.probe.startup_seconds < hub.llm.probe.startup_seconds
    (step,) = synced.weight_syncs
    # 16 GB of Qwen3-8B at the 100 MiB/s download default, with the probes' 1.5 margin
    assert step.seconds == pytest.approx(16_381_470_720 / 2**20 / 100 * 1.5, abs=1)
    own = sum(s.probe.own_seconds for s in synced.servers)
    assert synced.rollout_seconds == IMAGE_PULL_S + step.seconds + own


def test_the_sync_service_account_goes_only_to_pods_that_copy_from_s3() -> None:
    config = _with_llm_weights_in_s3(syncServiceAccount="model-reader")
    assert make_plan(config).pairs[0].service_account == "model-reader"
    raw = copy.deepcopy(load_stack("dev").values)
    raw["storage"] = {**raw["storage"], "syncServiceAccount": "model-reader"}
    assert make_plan(parse_stack_config(raw)).pairs[0].service_account is None
