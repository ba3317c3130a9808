"""Suite-wide hooks: tests that need a tool built outside the suite skip, as one summary line per tool, when it
is missing (tests/built_tools.py)."""

from __future__ import annotations

import inspect

import pytest

from tests import built_tools

SKIPPED_FOR = pytest.StashKey[str]()
# Every skip for a missing tool is reported at this one place, so pytest folds them into a single line.
FOLDED_AT = (inspect.getsourcefile(built_tools) or built_tools.__file__, 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for tool in built_tools.BUILT_TOOLS:
        needing = [item for item in items if item.get_closest_marker(tool.marker)]
        reason = built_tools.absence(tool.marker) if needing else None
        for item in needing if reason else []:
            item.add_marker(pytest.mark.skip(reason=reason))
            item.stash[SKIPPED_FOR] = tool.marker


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if item.stash.get(SKIPPED_FOR, None) and report.skipped and isinstance(report.longrepr, tuple):
        report.longrepr = (*FOLDED_AT, report.longrepr[2])
    return report
