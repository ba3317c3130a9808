"""plan_changes on real edits of the prod stack: what moved, per pair, and which pairs stop fitting."""

from __future__ import annotations

from colo.diff.plan_changes import POSITIONAL, PairChange, parse_flags, plan_changes
from tests.diff.conftest import (
    StackCopy,
    add_pair,
    plan_file,
    remove_moe_pair,
    stretch_gemma_context,
    swap_first_llm,
)


def _by_name(pairs: tuple[PairChange, ...]) -> dict[str, PairChange]:
    return {p.name: p for p in pairs}


def test_a_model_swap_changes_only_that_pair_and_still_fits(stack_copy: StackCopy) -> None:
    changes = plan_changes(
        plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", swap_first_llm))
    )
    pairs = _by_name(changes.pairs)
    swapped = pairs["qwen27b"]
    assert swapped.status == "changed" and swapped.verdict is None and swapped.fits_after
    rows = {(r.scope, r.label): r for r in swapped.budget}
    assert rows["llm", "model"].before == "Qwen/Qwen3.6-27B-FP8"
    assert rows["llm", "model"].after == "Qwen/Qwen3-30B-A3B-FP8"
    assert ("embedding", "model") not in rows  # only rows that changed
    flags = {(f.server, f.flag): f for f in swapped.flags}
    assert flags["qwen27b-llm", POSITIONAL].after == "Qwen/Qwen3-30B-A3B-FP8"
    assert flags["qwen27b-llm", "--served-model-name"].before == "Qwen/Qwen3.6-27B-FP8"
    assert pairs["gemma31b"].status == "unchanged" and pairs["qwen35b-moe"].status == "unchanged"
    assert changes.after_fits and not changes.does_not_fit and not changes.stack


def test_a_longer_context_that_breaks_a_gpu_is_a_pair_that_stops_fitting(stack_copy: StackCopy) -> None:
    changes = plan_changes(
        plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", stretch_gemma_context))
    )
    assert not changes.after_fits
    (broken,) = changes.does_not_fit
    assert broken.name == "gemma31b" and broken.verdict == "stops fitting"
    assert broken.fits_before is True and broken.fits_after is False
    assert [p.path for p in broken.problems_after] == ["colo:pairs[2].llm.maxModelLen"]
    assert ("llm", "max model len") in {(r.scope, r.label) for r in broken.budget}


def test_an_added_pair_shows_every_row_and_the_extra_node_it_needs(stack_copy: StackCopy) -> None:
    changes = plan_changes(
        plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", add_pair))
    )
    added = _by_name(changes.pairs)["qwen8b"]
    assert added.status == "added" and added.fits_after and added.where_after == "node 0 GPU 3"
    assert all(r.before == "—" for r in added.budget)
    assert {f.before for f in added.flags} == {None}
    # 4 pairs take GPUs 0-3, so the spare GPU needs a second node
    assert [(r.label, r.before, r.after) for r in changes.stack] == [("nodes", "1", "2")]


def test_a_removed_pair_is_reported_and_the_others_are_unchanged(stack_copy: StackCopy) -> None:
    changes = plan_changes(
        plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", remove_moe_pair))
    )
    statuses = {p.name: p.status for p in changes.pairs}
    # gemma31b moves from GPU 2 to GPU 1 when the pair before it goes away
    assert statuses == {"qwen35b-moe": "removed", "qwen27b": "unchanged", "gemma31b": "changed"}
    assert _by_name(changes.pairs)["gemma31b"].where_after == "node 0 GPU 1"
    assert changes.after_fits


def test_the_same_stack_on_both_sides_is_unchanged(stack_copy: StackCopy) -> None:
    changes = plan_changes(plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head")))
    assert changes.unchanged and changes.after_fits


def test_a_stack_absent_on_the_base_side_adds_every_pair(stack_copy: StackCopy) -> None:
    changes = plan_changes(None, plan_file(stack_copy("dev", "head")))
    assert [(p.name, p.status) for p in changes.pairs] == [("rag", "added")]
    assert {r.before for r in changes.stack} == {"—"}


def test_vllm_arguments_are_compared_flag_by_flag() -> None:
    args = ["m", "--port", "8000", "--enforce-eager", "--kv-cache-dtype=fp8", "--x", "1", "--x", "2"]
    assert parse_flags(args) == {
        POSITIONAL: "m",
        "--port": "8000",
        "--enforce-eager": "",
        "--kv-cache-dtype": "fp8",
        "--x": "1 2",
    }
