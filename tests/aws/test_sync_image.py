"""The weight-sync image: what the Dockerfile installs is all `python -m colo.aws.weight_sync` imports."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from colo.components.pod_security import RUN_AS
from colo.plan.weight_sync_step import COMMAND
from tests.paths import REPO_ROOT

DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
# Installed by pyproject for the program, left out of the image.
NOT_IN_IMAGE = ("pulumi", "pulumi_aws", "pulumi_kubernetes", "pydantic", "pydantic_core", "yaml")

RUN_WITHOUT = """
import importlib.abc, runpy, sys

class NotInImage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(name + " is not installed in the sync image")
        return None

sys.meta_path.insert(0, NotInImage())
sys.argv = ["weight_sync", "--help"]
runpy.run_module("colo.aws.weight_sync", run_name="__main__", alter_sys=True)
"""


def _instruction(name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in DOCKERFILE.splitlines() if line.startswith(f"{name} ")]


def test_the_sync_command_needs_nothing_the_image_leaves_out() -> None:
    script = RUN_WITHOUT.format(blocked=set(NOT_IN_IMAGE))
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "usage: python -m colo.aws.weight_sync" in result.stdout


def test_the_image_is_pinned_runs_as_the_pod_uid_and_starts_the_sync_command() -> None:
    (base,) = _instruction("FROM")
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base), base
    assert _instruction("USER") == [f"{RUN_AS}:{RUN_AS}"]
    (user,) = [run for run in _instruction("RUN") if "useradd" in run]
    assert f"groupadd --gid {RUN_AS} " in user
    assert f"useradd --uid {RUN_AS} --gid {RUN_AS} " in user
    assert json.loads(_instruction("ENTRYPOINT")[0]) == list(COMMAND)
    (install,) = [run for run in _instruction("RUN") if "pip install" in run]
    assert "pip install --no-deps ." in install
    assert re.search(r'"boto3==1\.\d+\.\d+"', install)
