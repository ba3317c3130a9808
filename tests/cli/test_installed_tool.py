"""colo installed like any Python tool (`pip install .`, not editable) works in a project directory.

The package is built from this working tree and installed into a folder of its own; the test environment
provides the dependencies. Nothing of the checkout is on the path, so a file looked up next to the
installed package (rather than in the project, or as package data) fails here.

Building needs setuptools from PyPI or uv's cache, hence the `install` mark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.pulumi_cli.lockfile import uv_binary

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder `uv pip install --target` put the built colo package and its `colo` script in."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy(REPO_ROOT / "pyproject.toml", source)
    shutil.copytree(REPO_ROOT / "colo", source / "colo", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path_factory.mktemp("installed")
    result = subprocess.run(
        [str(uv_binary()), "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "VIRTUAL_ENV": str(Path(sys.executable).parents[1])},
    )
    assert result.returncode == 0, result.stderr
    return target


def _project(root: Path) -> Path:
    root.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO_ROOT / name, root / name)
    shutil.copytree(REPO_ROOT / "stacks", root / "stacks")
    return root


def _run(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_installed_package_is_the_one_that_runs(installed: Path, tmp_path: Path) -> None:
    result = _run(installed, tmp_path, "-c", "import colo; print(colo.__file__)")
    assert result.stdout.strip() == str(installed / "colo" / "__init__.py")


def test_plan_and_render_work_from_the_project_directory_and_below(installed: Path, tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    colo = str(installed / "bin" / "colo")
    plan = _run(installed, project, colo, "plan", "--stack", "local")
    assert plan.returncode == 0, plan.stderr
    assert "pair chat" in plan.stdout
    render = _run(installed, project / "stacks", colo, "render", "--stack", "local", "--out", "../out")
    assert render.returncode == 0, render.stderr
    assert list((project / "out").rglob("*-deployment-chat.yaml"))


def test_the_colo_command_ends_quietly_when_its_reader_goes_away(installed: Path, tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    colo = str(installed / "bin" / "colo")
    piped = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" "{colo}" plan --stack local --format json | head -c 1'],
        cwd=project,
        env={**env, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.stdout == "{"
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
