"""Suite-wide hooks: no test reaches the Hugging Face Hub or the user's own Hub cache and token; and tests that need
a tool built outside the suite skip, as one summary line per tool, when it is missing (tests/built_tools.py)."""

from __future__ import annotations

import inspect
import os
import tempfile

import pytest

from tests import built_tools

pytest_plugins = ["tests.hub.plugin"]

SKIPPED_FOR = pytest.StashKey[str]()
# Every skip for a missing tool is reported at this one place, so pytest folds them into a single line.
# No line number: pytest folds a marker's skips without one, and every other skip by (file, line, reason).
FOLDED_AT = (inspect.getsourcefile(built_tools) or built_tools.__file__, None)


# Nothing listens on the discard port of loopback: a read that reaches for the Hub fails at once, the way it fails
# on a machine with no network. Tests that serve a Hub set HF_ENDPOINT to their own server.
CLOSED_ENDPOINT = "http://127.0.0.1:9"


def pytest_configure(config: pytest.Config) -> None:
    """Set before any test runs, so subprocesses that tests start inherit it too."""
    home = tempfile.mkdtemp(prefix="colo-tests-hf-home-")
    for key in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_CACHE",
    ):
        os.environ.pop(key, None)
    os.environ.update(HF_HOME=home, HF_ENDPOINT=CLOSED_ENDPOINT, HF_TOKEN_PATH=os.path.join(home, "token"))


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
