"""A hybrid model keeps one recurrent-state block per decode sequence. With FULL decode graphs, vLLM 0.20 and later
refuse to start when max_num_seqs exceeds the KV pool's blocks (config/compilation.py::
resolve_cudagraph_mode_and_sizes): on 2026-12-07 vLLM 0.22.0 refused colo's own H100 plan of Qwen3.6-27B-FP8
("max_num_seqs (1024) exceeds available Mamba cache blocks (729)"). colo lowers a batch it derived, and refuses one
the user set, before anything is deployed."""

from __future__ import annotations

from typing import Any

from colo.config import parse_stack_config
from colo.plan.stack import Plan, make_plan


def _hybrid_pair(*, version: str = "0.22.0", **llm: Any) -> dict[str, Any]:
    """The pair of bench/gpu/stacks/Pulumi.h100-hybrid.yaml: the hybrid LLM takes what its two companions leave."""
    vllm = {"version": version}
    return {
        "cluster": {"gpuPairing": "uuid-handoff", "kubernetesVersion": "1.34", "nodeImage": "al2023-nvidia"},
        "nodePool": {
            "mode": "existing",
            "gpu": "H100-SXM",
            "instanceType": "p5.48xlarge",
            "nodeSelector": {"p": "h"},
        },
        "pairs": [
            {
                "name": "hybrid",
                "llm": {"model": "Qwen/Qwen3.6-27B-FP8", "maxModelLen": 32768, "vllm": vllm, **llm},
                "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": vllm},
                "reranker": {"model": "Qwen/Qwen3-Reranker-0.6B", "vllm": vllm},
            }
        ],
    }


def _plan(raw: dict[str, Any]) -> Plan:
    return make_plan(parse_stack_config(raw))


def _llm(plan: Plan) -> Any:
    (pair,) = plan.pairs
    return next(s for s in pair.servers if s.role == "llm")


def _arg(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def test_a_derived_batch_is_lowered_below_the_planned_state_blocks_and_keeps_the_graphs() -> None:
    plan = _plan(_hybrid_pair())
    assert plan.feasible, plan.problems
    llm = _llm(plan)
    budget = llm.memory_plan.budget
    blocks = budget.decode_state_blocks
    assert blocks is not None
    seqs = int(_arg(list(llm.args), "--max-num-seqs") or 0)
    # 5 % below the refused default's pool, in steps of 8; the lowered batch's own pool is no smaller
    assert seqs % 8 == 0 and 0.9 * blocks <= seqs <= 0.95 * blocks
    assert "--enforce-eager" not in llm.args and budget.graphs.full > 0
    notes = llm.memory_plan.notes
    assert any("max-num-seqs lowered from vLLM's default 1024" in note for note in notes)
    # the graphs it kept are the first candidate's: no note says they did not fit
    assert not any("do not fit" in note for note in notes), notes


def test_a_batch_the_user_set_above_the_state_blocks_is_refused_at_max_num_seqs_with_the_bound() -> None:
    plan = _plan(_hybrid_pair(maxNumSeqs=1024))
    assert not plan.feasible
    problems = {p.path: p.message for p in plan.problems}
    message = problems["colo:pairs[0].llm.maxNumSeqs"]
    assert "max_num_seqs (1024) exceeds available Mamba cache blocks" in message
    assert "set maxNumSeqs to at most" in message


def test_a_batch_within_the_state_blocks_is_planned_as_set() -> None:
    plan = _plan(_hybrid_pair(maxNumSeqs=512))
    assert plan.feasible, plan.problems
    assert _arg(list(_llm(plan).args), "--max-num-seqs") == "512"


def test_eager_mode_captures_no_full_graphs_so_the_batch_is_not_held_to_the_blocks() -> None:
    plan = _plan(_hybrid_pair(maxNumSeqs=1024, enforceEager=True))
    assert plan.feasible, plan.problems
    assert _arg(list(_llm(plan).args), "--max-num-seqs") == "1024"


def test_releases_before_0_20_make_no_such_check_and_keep_the_default_batch() -> None:
    plan = _plan(_hybrid_pair(version="0.19.1"))
    llm = _llm(plan)
    budget = llm.memory_plan.budget
    assert budget.decode_state_blocks is None
    assert not any("max-num-seqs lowered" in note for note in llm.memory_plan.notes)
