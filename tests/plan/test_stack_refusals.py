"""A stack whose server vLLM would refuse is refused at the server's own key; one it accepts reaches vLLM as such."""

from __future__ import annotations

import copy

import pytest

from colo.cli import main
from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack


def test_a_pair_whose_embedder_would_run_v0_is_refused_at_its_version() -> None:
    raw = copy.deepcopy(load_stack("dev").values)
    pair = raw["pairs"][0]
    pair["embedding"]["model"] = "BAAI/bge-m3"
    pair["embedding"]["vllm"] = {"version": "0.10.0"}
    plan = make_plan(parse_stack_config(raw))
    problem = next(p for p in plan.problems if p.path == "colo:pairs[0].embedding.vllm.version")
    assert "['XLMRobertaModel'] is not supported by the V1 Engine. Falling back to V0." in problem.message


def test_estimate_refuses_a_context_past_the_models_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", "0.20.0"]
    assert main([*argv, "--max-model-len", "65536"]) == 2
    assert "--max-model-len" in capsys.readouterr().err
    assert main([*argv, "--max-model-len", "65536", "--allow-long-max-model-len", "--json"]) in (0, 1)


def test_a_stack_that_allows_a_long_context_passes_the_variable_to_vllm() -> None:
    raw = copy.deepcopy(load_stack("dev").values)
    llm = raw["pairs"][0]["llm"]
    llm["maxModelLen"] = 2 * 40960
    assert any(p.path.endswith("llm.maxModelLen") for p in make_plan(parse_stack_config(raw)).problems)
    llm["allowLongMaxModelLen"] = True
    plan = make_plan(parse_stack_config(raw))
    assert not any("User-specified max_model_len" in p.message for p in plan.problems)
    if plan.pairs:
        assert ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1") in plan.pairs[0].llm.env


def test_a_companion_batch_below_its_max_num_seqs_is_refused_before_sizing() -> None:
    """The local stack's embedder with 32 batched tokens against the budget's 64 sequences: vLLM's scheduler
    config refuses it at start, so the plan names the key and nothing is sized."""
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["embedding"]["maxNumBatchedTokens"] = 32
    plan = make_plan(parse_stack_config(raw))
    assert not plan.pairs
    (problem,) = plan.problems
    assert problem.path == "colo:pairs[0].embedding.maxNumBatchedTokens"
    assert problem.message == (
        "ValueError: max_num_batched_tokens (32) must be greater than or equal to max_num_seqs (64). "
        "[fix: maxNumBatchedTokens at least 64, or maxNumSeqs at most 32]"
    )
    raw["pairs"][0]["embedding"]["maxNumSeqs"] = 32  # the fix the message gives
    assert not make_plan(parse_stack_config(raw)).problems


def test_an_llm_max_num_seqs_above_vllms_default_batch_is_refused_at_max_num_seqs() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["maxNumSeqs"] = 4096  # the L40S default batch is 2048 tokens
    problems = make_plan(parse_stack_config(raw)).problems
    problem = next(p for p in problems if p.path == "colo:pairs[0].llm.maxNumSeqs")
    assert (
        "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096)"
        in problem.message
    )
