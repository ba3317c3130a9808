from __future__ import annotations

from colo.cli.common import load_config
from colo.config import StackConfig
from colo.plan.stack import make_plan
from colo.plan.weight_sync_step import weight_sync_step
from colo.stackfiles import load_stack

URI = "s3://models/qwen3-8b/"


def _with_llm_weights_in_s3() -> StackConfig:
    config = load_config(load_stack("dev"))
    pair = config.pairs[0]
    llm = pair.llm.model_copy(update={"weights_uri": URI})
    return config.model_copy(update={"pairs": [pair.model_copy(update={"llm": llm})]})


def test_the_sync_step_fills_the_directory_the_server_loads() -> None:
    plan = make_plan(_with_llm_weights_in_s3())
    pair = plan.pairs[0]
    step = weight_sync_step(pair, pair.llm, region="us-east-1")
    assert step is not None
    assert step.command == ("python", "-m", "colo.aws.weight_sync", URI, "/models/rag/llm")
    assert step.target in pair.llm.args  # vLLM's model argument is the synced directory
    assert step.ready_file == "/models/rag/llm/.colo-complete"
    assert step.mount_path == "/models"
    assert step.env["AWS_REGION"] == "us-east-1"
    assert step.name == "sync-rag-llm"


def test_servers_loading_from_the_hub_need_no_sync_step() -> None:
    plan = make_plan(_with_llm_weights_in_s3())
    pair = plan.pairs[0]
    embedding = next(s for s in pair.servers if s.role == "embedding")
    assert weight_sync_step(pair, embedding, region="us-east-1") is None


def test_without_a_region_the_sdk_default_is_left_alone() -> None:
    plan = make_plan(_with_llm_weights_in_s3())
    step = weight_sync_step(plan.pairs[0], plan.pairs[0].llm, region=None)
    assert step is not None
    assert "AWS_REGION" not in step.env
