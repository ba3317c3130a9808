"""A suite that needs a tool built outside the test run is skipped, in one summary line, where it is missing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import built_tools

pytest_plugins = ["pytester"]

NEEDS_GADGET = """
import pytest

pytestmark = pytest.mark.needs_gadget

def test_one():
    raise AssertionError("must not run without the gadget")

def test_two():
    raise AssertionError("must not run without the gadget")

@pytest.mark.parametrize("case", [1, 2])  # a marked function: pytest folds its skips by line otherwise
def test_three(case):
    raise AssertionError("must not run without the gadget")
"""


@pytest.fixture
def gadget(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str | None]]:
    """A pretend tool whose absence the test sets; colo's own hooks run in the inner session."""
    state: list[str | None] = [None]
    monkeypatch.setattr(
        built_tools, "BUILT_TOOLS", (built_tools.BuiltTool("needs_gadget", lambda: state[0]),)
    )
    built_tools.absence.cache_clear()
    yield state
    built_tools.absence.cache_clear()


def run_inner(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeconftest(
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_makereport\n"
    )
    pytester.makeini("[pytest]\nmarkers =\n    needs_gadget: needs the gadget\n")
    pytester.makepyfile(test_first=NEEDS_GADGET, test_second=NEEDS_GADGET)
    return pytester.runpytest_inprocess("-ra", "-p", "no:xdist", "-p", "no:cacheprovider")


def test_tests_of_a_missing_tool_are_skipped_and_counted_in_one_summary_line(
    pytester: pytest.Pytester, gadget: list[str | None]
) -> None:
    gadget[0] = "the gadget is not built: run scripts/build-gadget.sh"
    result = run_inner(pytester)
    result.assert_outcomes(skipped=8)
    lines = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert len(lines) == 1, result.outlines
    assert lines[0].startswith("SKIPPED [8] ") and lines[0].endswith(
        "built_tools.py: the gadget is not built: run scripts/build-gadget.sh"
    )


def test_tests_of_a_built_tool_run(pytester: pytest.Pytester, gadget: list[str | None]) -> None:
    result = run_inner(pytester)
    result.assert_outcomes(failed=8)
