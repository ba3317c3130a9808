"""The integer programme: the cheapest instance type and node count whose packings hold every LLM, with
companions, spare GPUs, node resources and cuts respected, and ties broken by nodes, then spare memory."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.pack.solver import NodeType, Option, Programme, solve

SMALL = NodeType("s.1", "gpu-s", 1, 1.0, 24_000, 3_600, 28_000)
LARGE = NodeType("l.1", "gpu-l", 1, 2.0, 48_000, 3_600, 28_000)
LARGE_X4 = NodeType("l.4", "gpu-l", 4, 7.0, 48_000, 47_600, 350_000)


def option(
    llm: int, gpu: str, *, embedding: int = 0, reranker: int | None = None, used: int = 40_000
) -> Option:
    return Option(llm, embedding, reranker, gpu, used, 3_000, 26_624)


def programme(options: list[Option], types: list[NodeType], **overrides: object) -> Programme:
    base = Programme(
        llms=max(o.llm for o in options) + 1,
        embeddings=1,
        reranker_replicas=(),
        spare_gpus=0,
        max_nodes=None,
        options=tuple(options),
        node_types=tuple(types),
    )
    return replace(base, **overrides)


def test_the_cheapest_type_whose_gpu_holds_every_llm_is_chosen() -> None:
    # LLM 1 fits only the large GPU, so the cheap small type cannot hold the stack.
    options = [option(0, "gpu-s"), option(0, "gpu-l"), option(1, "gpu-l")]
    choice = solve(programme(options, [SMALL, LARGE, LARGE_X4]), frozenset())
    assert choice is not None
    assert (choice.node_type, choice.nodes, choice.usd_per_hour) == (LARGE, 2, 4.0)
    assert [o.gpu for o in choice.options] == ["gpu-l", "gpu-l"]


def test_spare_gpus_take_node_slots_like_pairs() -> None:
    options = [option(0, "gpu-l"), option(1, "gpu-l"), option(2, "gpu-l")]
    choice = solve(programme(options, [LARGE, LARGE_X4], spare_gpus=2), frozenset())
    assert choice is not None
    assert (choice.node_type.name, choice.nodes) == ("l.1", 5)  # 5 x $2 beats 2 x $7


def test_at_equal_cost_fewer_nodes_win_then_less_spare_memory() -> None:
    four_singles = replace(LARGE, usd_per_hour=1.75)  # 4 x 1.75 = 7.0 = one l.4
    options = [option(i, "gpu-l") for i in range(4)]
    choice = solve(programme(options, [four_singles, LARGE_X4]), frozenset())
    assert choice is not None
    assert choice.node_type == LARGE_X4
    # Both ways of giving each LLM one of the two embeddings cost the same; the fuller GPUs win.
    options = [
        option(0, "gpu-l", embedding=0, used=30_000),
        option(0, "gpu-l", embedding=1, used=44_000),
        option(1, "gpu-l", embedding=0, used=44_000),
        option(1, "gpu-l", embedding=1, used=30_000),
    ]
    tight = solve(programme(options, [LARGE], embeddings=2), frozenset())
    assert tight is not None
    assert [o.embedding for o in tight.options] == [1, 0]
    assert tight.spare_mib == 2 * 48_000 - 2 * 44_000


def test_every_listed_embedding_runs_beside_some_llm() -> None:
    options = [option(0, "gpu-l", embedding=e) for e in (0, 1)] + [option(1, "gpu-l", embedding=0)]
    choice = solve(programme(options, [LARGE], embeddings=2), frozenset())
    assert choice is not None
    assert {o.embedding for o in choice.options} == {0, 1}


def test_a_reranker_runs_beside_exactly_its_replicas() -> None:
    options = [option(i, "gpu-l", reranker=r) for i in range(3) for r in (None, 0)]
    choice = solve(programme(options, [LARGE], reranker_replicas=(2,)), frozenset())
    assert choice is not None
    assert sum(o.reranker == 0 for o in choice.options) == 2


def test_a_pair_whose_pod_outgrows_one_node_rules_that_type_out() -> None:
    heavy = replace(option(0, "gpu-l"), cpu_millis=8_000)
    choice = solve(programme([heavy], [LARGE, LARGE_X4]), frozenset())
    assert choice is not None
    assert choice.node_type == LARGE_X4


def test_the_nodes_hold_every_pod_s_requests_together() -> None:
    # Four pairs of 12 CPUs each need 48 of the 47.6 an l.4 node offers: two nodes.
    options = [replace(option(i, "gpu-l"), cpu_millis=12_000) for i in range(4)]
    choice = solve(programme(options, [LARGE_X4]), frozenset())
    assert choice is not None
    assert choice.nodes == 2


def test_a_cut_excludes_a_refused_choice_and_the_next_best_follows() -> None:
    prog = programme([option(0, "gpu-l")], [LARGE, LARGE_X4])
    first = solve(prog, frozenset())
    assert first is not None
    assert first.node_type == LARGE
    second = solve(prog, frozenset(), [first])
    assert second is not None
    assert second.node_type == LARGE_X4
    assert solve(prog, frozenset(), [first, second]) is None


def test_excluded_types_are_not_chosen_and_nothing_left_is_none() -> None:
    options = [option(0, "gpu-l")]
    prog = programme(options, [LARGE, LARGE_X4])
    alternative = solve(prog, frozenset({"l.1"}))
    assert alternative is not None
    assert alternative.node_type == LARGE_X4
    assert solve(prog, frozenset({"l.1", "l.4"})) is None


def test_max_nodes_bounds_the_node_count() -> None:
    options = [option(i, "gpu-l") for i in range(3)]
    assert solve(programme(options, [LARGE], max_nodes=2), frozenset()) is None


def test_the_solver_prints_nothing_on_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    solve(programme([option(0, "gpu-l")], [LARGE]), frozenset())
    assert capfd.readouterr().out == ""
