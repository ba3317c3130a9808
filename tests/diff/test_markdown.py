"""The PR comment: marker, breaking pairs first, flag and probe sections, and the no-change message."""

from __future__ import annotations

from colo.diff import markdown
from colo.diff.objects import ObjectChange, ObjectChanges
from colo.diff.plan_changes import plan_changes
from tests.diff.conftest import StackCopy, plan_file, stretch_gemma_context, swap_first_llm

NO_OBJECTS = "not rendered in this test"


def test_a_pair_that_stops_fitting_is_listed_before_everything_else(stack_copy: StackCopy) -> None:
    def both(config: dict) -> None:  # type: ignore[type-arg]
        swap_first_llm(config)
        stretch_gemma_context(config)

    changes = plan_changes(plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", both)))
    text = markdown.render("prod", "base", "head", changes, NO_OBJECTS)
    assert text.startswith("<!-- colo-diff:prod -->\n## colo diff `prod`: ⚠️ 1 pair does not fit\n")
    warning = text.index("### ⚠️ does not fit")
    assert warning < text.index("### Pairs")
    assert text.index("#### `gemma31b` (node 0 GPU 2): stops fitting") > warning
    assert "- `colo:pairs[2].llm.maxModelLen`: " in text
    assert "- --max-model-len 16384\n+ --max-model-len 65536" in text


def test_a_model_swap_shows_the_budget_rows_flags_and_probe_budgets(stack_copy: StackCopy) -> None:
    changes = plan_changes(
        plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head", swap_first_llm))
    )
    text = markdown.render("prod", "base", "head", changes, NO_OBJECTS)
    assert "## colo diff `prod`: ✅ fits; pairs: 1 changed" in text
    assert "| llm | model | Qwen/Qwen3.6-27B-FP8 | Qwen/Qwen3-30B-A3B-FP8 |  |" in text
    assert (
        "@@ qwen27b-llm @@\n- (model path) Qwen/Qwen3.6-27B-FP8\n+ (model path) Qwen/Qwen3-30B-A3B-FP8"
        in text
    )
    assert "Startup probe budgets:" in text
    assert "- `gemma31b` (node 0 GPU 2): no change, fits" in text
    assert "### ⚠️" not in text


def test_no_change_says_so(stack_copy: StackCopy) -> None:
    changes = plan_changes(plan_file(stack_copy("prod", "base")), plan_file(stack_copy("prod", "head")))
    text = markdown.render("prod", "base", "head", changes, ObjectChanges((), (), ()))
    assert "✅ nothing changes" in text
    assert "Nothing changes: the plan is the same on both sides." in text
    assert "No change to the Kubernetes objects." in text


def test_object_changes_are_listed_with_their_field_paths() -> None:
    changes = plan_changes(None, None)
    objects = ObjectChanges(
        added=("Service/colo/new",),
        removed=("Service/colo/old",),
        changed=(ObjectChange("Deployment/colo/a", tuple(f"f{i}" for i in range(14))),),
    )
    text = markdown.render("s", "base", "head", changes, objects)
    assert "- added `Service/colo/new`\n- removed `Service/colo/old`\n" in text
    assert "`f11` and 2 more" in text


def test_an_invalid_side_is_named_in_the_comment() -> None:
    from colo.errors import Problem

    text = markdown.render_invalid(
        "prod", "base", "origin/main:stacks/Pulumi.prod.yaml", [Problem("colo:x", "bad")]
    )
    assert text.startswith(
        "<!-- colo-diff:prod -->\n## colo diff `prod`: ❌ invalid config on the base side\n"
    )
    assert "- `colo:x`: bad" in text
