"""A first start in order finds the servers before it idle: their activation peaks back with the driver, so
`colo verify` holds its free memory at startup against that, while the plan's startup check keeps them at their
footprint."""

from __future__ import annotations

import copy
from typing import Any

from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack
from colo.verify.compare import planned_figures
from colo.verify.idle import returned_before


def _plan(mutate: Any = None) -> Any:
    raw = copy.deepcopy(load_stack("local").values)
    if mutate:
        mutate(raw)
    return make_plan(parse_stack_config(raw))


def test_each_server_is_owed_the_activation_peaks_of_the_profiled_servers_started_before_it() -> None:
    plan = _plan()
    (pair,) = plan.pairs
    first, second = pair.servers
    returned = returned_before(plan.pairs)
    assert returned[first.name] == 0
    assert returned[second.name] == first.memory_plan.budget.activation_bytes > 0


def test_a_pinned_kv_pool_returns_nothing_colo_has_read_in_source() -> None:
    def pin(raw: dict[str, Any]) -> None:
        raw["pairs"][0]["embedding"]["kvCacheMemoryBytes"] = 1 << 30

    plan = _plan(pin)
    (pair,) = plan.pairs
    assert returned_before(plan.pairs)[pair.servers[1].name] == 0


def test_the_planned_free_memory_at_startup_grows_by_what_is_returned_and_the_check_does_not() -> None:
    plan = _plan()
    (pair,) = plan.pairs
    budget = pair.servers[1].memory_plan.budget
    returned = returned_before(plan.pairs)[pair.servers[1].name]
    alone = planned_figures(budget, summary_consumed=False)
    idle = planned_figures(budget, summary_consumed=False, returned_before=returned)
    assert round(float(idle["free_at_startup"]) - float(alone["free_at_startup"]), 2) == round(
        returned / 2**30, 2
    )
    assert idle["starts"] == alone["starts"] == "starts"
