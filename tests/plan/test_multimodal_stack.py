"""Vision towers and graph profiling as a stack sets them: the keys reach vLLM as flags, and the field report's MoE
pair is planned with what fits after its weights."""

from __future__ import annotations

import copy
import json

from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from tests.plan.conftest import field_report_raw


def test_the_multimodal_keys_reach_vllm_as_flags() -> None:
    raw = field_report_raw()
    llm = next(p for p in raw["pairs"] if "moe" in p["name"])["llm"]
    llm.update({"limitMmPerPrompt": {"image": 0, "video": 0}, "skipMmProfiling": True})
    plan = make_plan(parse_stack_config(raw))
    args = list(next(p for p in plan.pairs if "moe" in p.name).llm.args)
    assert json.loads(args[args.index("--limit-mm-per-prompt") + 1]) == {"image": 0, "video": 0}
    assert "--skip-mm-profiling" in args
    raw = copy.deepcopy(field_report_raw())
    next(p for p in raw["pairs"] if "moe" in p["name"])["llm"]["languageModelOnly"] = True
    args = list(next(p for p in make_plan(parse_stack_config(raw)).pairs if "moe" in p.name).llm.args)
    assert "--language-model-only" in args


def test_the_reports_moe_pair_is_planned_without_default_graphs_and_refused_when_they_are_forced() -> None:
    raw = field_report_raw(moe_eager=False)
    plan = make_plan(parse_stack_config(raw))
    moe = next(p for p in plan.pairs if p.name == "qwen35b-moe").llm.memory_plan
    assert moe.graph_decision != "captured (default sizes)"
    raw = field_report_raw(moe_eager=False)
    next(p for p in raw["pairs"] if "moe" in p["name"])["llm"]["enforceEager"] = False
    plan = make_plan(parse_stack_config(raw))
    problem = next(p for p in plan.problems if p.path == "colo:pairs[1].llm")
    assert problem.message.startswith(
        "torch.OutOfMemoryError: CUDA out of memory while profiling CUDA-graph memory"
    )
    assert "enforceEager: true" in problem.message
