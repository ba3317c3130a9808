"""The GitHub workflows pass actionlint (with shellcheck on their `run:` steps) and pin every action."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.paths import REPO_ROOT

WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))
# The test extra installs actionlint and shellcheck next to the interpreter; actionlint runs shellcheck
# on every `run:` step when it finds it on PATH.
TOOL_PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def _actionlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("actionlint", path=TOOL_PATH)
    assert binary, "actionlint is missing: install the test extra (pip install -e '.[test]')"
    env = {**os.environ, "PATH": TOOL_PATH}
    return subprocess.run([binary, "-no-color", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_every_workflow_passes_actionlint() -> None:
    assert WORKFLOWS
    result = _actionlint(*map(str, WORKFLOWS), cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_does_report_a_broken_workflow(tmp_path: Path) -> None:
    """Guards the test above against passing vacuously (wrong binary, nothing linted)."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ nope }}\n"
    )
    result = _actionlint(str(broken), cwd=tmp_path)
    assert result.returncode == 1 and "nope" in result.stdout


def test_every_action_is_pinned_to_a_full_commit_sha() -> None:
    for workflow in WORKFLOWS:
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_workflows_grant_no_permission_by_default() -> None:
    for workflow in WORKFLOWS:
        assert yaml.safe_load(workflow.read_text())["permissions"] == {}
