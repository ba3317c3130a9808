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


group_sizes = st.lists(st.sampled_from([1, 2, 4, 8]), max_size=24)
node_widths = st.sampled_from([8, 16])


@given(group_sizes, node_widths)
def test_every_group_lies_on_one_node_and_no_two_pairs_share_a_gpu(sizes: list[int], per_node: int) -> None:
    slots = place_pairs(sizes, per_node)
    taken = [(slot.node, g) for slot in slots for g in slot.gpu_indices]
    assert [slot.gpus for slot in slots] == sizes
    assert len(taken) == len(set(taken)) == sum(sizes)
    assert all(0 <= g < per_node for _, g in taken)


@given(group_sizes, spares, node_widths)
def test_groups_that_divide_the_node_strand_no_gpu(sizes: list[int], spare: int, per_node: int) -> None:
    assert node_count(sizes, spare, per_node) == ceil((sum(sizes) + spare) / per_node)


def test_a_tp4_group_and_three_single_gpu_pairs_share_an_eight_gpu_node_largest_first() -> None:
    assert place_pairs([1, 4, 1, 1], 8) == (
        Placement(0, 4),
        Placement(0, 0, 4),
        Placement(0, 5),
        Placement(0, 6),
    )
    assert Placement(0, 0, 4).gpu_indices == (0, 1, 2, 3)


def test_two_tp4_groups_on_four_gpu_nodes_take_a_node_each() -> None:
    assert place_pairs([4, 4], 4) == (Placement(0, 0, 4), Placement(1, 0, 4))
    assert node_count([4, 4], 1, 4) == 3


def test_a_group_larger_than_a_node_is_refused() -> None:
    with pytest.raises(ValueError, match="8 GPUs does not fit a node of 4"):
        place_pairs([8], 4)


def test_max_nodes_counts_the_gpus_of_the_groups() -> None:
    (problem,) = node_limit_problems([4, 4], 0, 4, max_nodes=1)
    assert "2 pairs on 8 GPUs" in problem.message and "need 2 nodes" in problem.message
