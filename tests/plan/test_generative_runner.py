"""A generative server whose checkpoint also carries sentence-transformers files keeps generating. vLLM's automatic
runner choice makes an embedder of any checkpoint whose modules.json names a Pooling module: from 0.10.1
`ModelConfig._get_default_runner_type` returns "pooling" before it looks at the architecture (0.10.1
config/__init__.py; 0.14.0, 0.22.0, 0.34.0 config/model.py), and 0.8.0 - 0.9.2 `_get_preferred_task` picks the
embed task first. colo's LLM names generation there (`--runner generate`, `--task generate` before 0.10.1) and
nowhere else: 0.10.0 picks the runner by the architecture's suffix, and a checkpoint without a Pooling module
renders as it always did. NovaSearch/stella_en_1.5B_v5 is such a checkpoint: a Qwen2ForCausalLM with a MEAN
Pooling module."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack
from colo.vllm import serve_args_refusal
from colo.vllm.checkpoint import hub as hub_module
from tests.hub.plugin import HubRun
from tests.hub.server import Snapshot, commit_of

ST_DECODER = "NovaSearch/stella_en_1.5B_v5"


@pytest.fixture(autouse=True)
def fresh_reads() -> Iterator[None]:
    hub_module._read.cache_clear()
    yield
    hub_module._read.cache_clear()


def _plan(version: str, **llm: Any) -> Plan:
    """The local stack at vLLM `version`, its LLM's keys changed."""
    raw = copy.deepcopy(load_stack("local").values)
    pair = raw["pairs"][0]
    pair["llm"] = {**pair["llm"], **llm}
    for role in ("llm", "embedding"):
        pair[role]["vllm"] = {"version": version}
    plan = make_plan(parse_stack_config(raw))
    assert plan.feasible, plan.problems
    return plan


def _st_decoder_plan(version: str) -> Plan:
    return _plan(version, model=ST_DECODER, revision="main", maxModelLen=8192)


def _runner_flags(args: tuple[str, ...]) -> list[str]:
    return [
        a for i, a in enumerate(args) if a in ("--runner", "--task") or args[i - 1] in ("--runner", "--task")
    ]


@pytest.mark.parametrize("version", ["0.10.1", "0.12.0", "0.13.0", "0.22.0", "0.34.0"])
def test_an_llm_whose_checkpoint_names_a_pooling_module_is_told_to_generate(
    local_hub: HubRun, version: str
) -> None:
    plan = _st_decoder_plan(version)
    args = plan.pairs[0].llm.args
    assert _runner_flags(args) == ["--runner", "generate"]
    assert serve_args_refusal(version, [], args) is None  # the release's parser takes it


def test_before_the_runner_flag_such_an_llm_is_given_the_generate_task(local_hub: HubRun) -> None:
    args = _st_decoder_plan("0.9.2").pairs[0].llm.args
    assert _runner_flags(args) == ["--task", "generate"]
    assert serve_args_refusal("0.9.2", [], args) is None


def test_0_10_0_picks_generation_by_the_architecture_and_gets_no_flag(local_hub: HubRun) -> None:
    """0.10.0 config.py::ModelConfig._resolve_runner: ForCausalLM resolves to generate; the Pooling module only
    picks the pooling task (_get_preferred_pooling_task)."""
    assert _runner_flags(_st_decoder_plan("0.10.0").pairs[0].llm.args) == []


@pytest.mark.parametrize("version", ["0.9.2", "0.10.0", "0.10.1", "0.19.1", "0.22.0", "0.34.0"])
def test_an_llm_without_a_pooling_module_names_no_runner_and_companions_keep_theirs(version: str) -> None:
    plan = _plan(version)
    assert _runner_flags(plan.pairs[0].llm.args) == []
    embedding = next(s for s in plan.pairs[0].servers if s.role == "embedding")
    flag = "--task" if version in ("0.9.2", "0.10.0") else "--runner"
    assert _runner_flags(embedding.args) == [flag, "embed" if flag == "--task" else "pooling"]


def _resaved(local_hub: HubRun, module_type: str) -> None:
    """stella's main moved to the newer sentence-transformers layout: its Pooling module of `module_type`, whose
    config names the pooling by a string pooling_mode."""
    repo = local_hub.hub.repo(ST_DECODER)
    assert repo is not None
    (snapshot,) = repo.snapshots.values()
    modules = json.loads(snapshot.files["modules.json"])  # type: ignore[arg-type]
    for item in modules:
        if item["type"] == "sentence_transformers.models.Pooling":
            item["type"] = module_type
    pooling = {"embedding_dimension": 1536, "pooling_mode": "mean", "include_prompt": True}
    files = {
        **snapshot.files,
        "modules.json": json.dumps(modules).encode(),
        "1_Pooling/config.json": json.dumps(pooling).encode(),
    }
    moved = Snapshot(commit_of(files), files)
    repo.snapshots[moved.commit] = moved
    repo.refs["main"] = moved.commit


def test_an_llm_with_the_newer_pooling_module_type_is_told_to_generate_from_0_30_0(local_hub: HubRun) -> None:
    """0.30.0 transformers_utils/config.py::_ST_POOLING_MODULE_TYPES adds
    sentence_transformers.sentence_transformer.modules.pooling.Pooling; 0.29.0 finds no Pooling module in it, and
    runs the Qwen2ForCausalLM as a generator unprompted."""
    _resaved(local_hub, "sentence_transformers.sentence_transformer.modules.pooling.Pooling")
    assert _runner_flags(_st_decoder_plan("0.29.0").pairs[0].llm.args) == []
    for version in ("0.30.0", "0.31.0", "0.34.0"):
        hub_module._read.cache_clear()
        assert _runner_flags(_st_decoder_plan(version).pairs[0].llm.args) == ["--runner", "generate"]
