from __future__ import annotations

from math import ceil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colo.plan.placement import Placement, node_count, node_limit_problems, place_pairs

pair_counts = st.integers(min_value=0, max_value=64)
spares = st.integers(min_value=0, max_value=8)
widths = st.integers(min_value=1, max_value=16)


@given(pair_counts, widths)
def test_every_pair_gets_a_gpu_of_its_own(pairs: int, per_node: int) -> None:
    slots = place_pairs(pairs, per_node)
    assert len(slots) == pairs
    assert len(set(slots)) == pairs


@given(pair_counts, widths)
def test_no_pair_is_placed_beyond_the_gpus_a_node_has(pairs: int, per_node: int) -> None:
    assert all(0 <= slot.gpu < per_node for slot in place_pairs(pairs, per_node))


@given(pair_counts, spares, widths)
def test_node_count_covers_pairs_and_spare_gpus_without_an_idle_node(
    pairs: int, spare: int, per_node: int
) -> None:
    count = node_count(pairs, spare, per_node)
    assert count == ceil((pairs + spare) / per_node)
    assert all(slot.node < count for slot in place_pairs(pairs, per_node))


@given(st.integers(min_value=1, max_value=64), widths)
def test_nodes_fill_up_before_the_next_one_is_used(pairs: int, per_node: int) -> None:
    slots = place_pairs(pairs, per_node)
    used_nodes = {slot.node for slot in slots}
    assert used_nodes == set(range(ceil(pairs / per_node)))


def test_three_pairs_on_a_four_gpu_node_take_its_first_three_gpus() -> None:
    assert place_pairs(3, 4) == (Placement(0, 0), Placement(0, 1), Placement(0, 2))
    assert node_count(3, 1, 4) == 1


def test_a_node_without_gpus_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one GPU"):
        place_pairs(1, 0)


def test_too_many_nodes_for_max_nodes_is_a_problem_naming_the_setting() -> None:
    (problem,) = node_limit_problems(3, 1, 1, max_nodes=2)
    assert problem.path == "colo:nodePool.maxNodes"
    assert "need 4 nodes" in problem.message
    assert node_limit_problems(3, 1, 1, max_nodes=4) == []
    assert node_limit_problems(3, 1, 1, max_nodes=None) == []


def test_the_stack_plan_spreads_pairs_over_single_gpu_nodes() -> None:
    from colo.cli.common import load_config
    from colo.plan.stack import make_plan
    from colo.stackfiles import load_stack

    config = load_config(load_stack("prod"))
    pool = config.node_pool.model_copy(update={"instance_type": "g6e.xlarge", "max_nodes": None})
    plan = make_plan(config.model_copy(update={"node_pool": pool}))
    assert [p.placement for p in plan.pairs] == [Placement(0, 0), Placement(1, 0), Placement(2, 0)]
    assert plan.node_count == 4  # three pairs and the spare GPU
