"""The adapter judges a pair or a stack exactly as `colo plan` does: same figures, same refusals."""

from __future__ import annotations

from typing import Any

from colo.cli.common import load_config
from colo.pack.engine import check_pair, check_stack
from colo.plan.report import plan_view
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack

PROD = load_stack("prod")


def _plan_view() -> dict[str, Any]:
    return plan_view(make_plan(load_config(PROD)))


def test_one_pair_on_its_gpu_has_the_figures_colo_plan_shows_for_it() -> None:
    view = _plan_view()
    base = {key: PROD.values[key] for key in ("cluster", "storage", "budget")}
    for raw, shown in zip(PROD.values["pairs"], view["pairs"], strict=True):
        check = check_pair(raw, "L40S", base)
        assert check.feasible
        assert check.used_mib == shown["predicted_used_mib"]
        figures = {(s.role, s.kv_tokens, round(s.concurrency, 2)) for s in check.servers}
        assert figures == {
            (s["role"], s["memory"]["kv_tokens"], s["memory"]["max_concurrency"]) for s in shown["servers"]
        }


def test_a_pair_the_gpu_cannot_hold_is_refused_with_the_plan_s_problem() -> None:
    base = {key: PROD.values[key] for key in ("cluster", "storage", "budget")}
    check = check_pair(PROD.values["pairs"][0], "L4", base)
    assert not check.feasible
    assert check.problems
    assert all(".llm" in p.path for p in check.problems)  # the LLM's weights or KV cache, not its companion


def test_a_whole_stack_is_planned_as_colo_plan_plans_it() -> None:
    check = check_stack(PROD.values, "us-east-1")
    view = _plan_view()
    assert check.feasible == view["feasible"]
    assert (check.node_count, check.gpus_per_node) == (
        view["node_pool"]["node_count"],
        view["node_pool"]["gpus_per_node"],
    )
    assert set(check.pairs) == {p["name"] for p in view["pairs"]}
