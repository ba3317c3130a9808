"""uv.lock pins exactly what pyproject.toml asks for: a dependency added, dropped or re-ranged without
re-locking fails here (run `uv lock`, or `make lock` to upgrade everything)."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import REPO_ROOT
from tests.pulumi_cli.fixture_index import DEPENDENCIES, fixture_project, pyproject_text
from tests.pulumi_cli.lockfile import locked_packages, uv_binary

PYPROJECT = REPO_ROOT / "pyproject.toml"


def uv_lock_check(project: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """uv's own check that the lock satisfies pyproject.toml: offline, with an empty cache of the test's own,
    so the answer depends on the project's files alone and never on what this machine has downloaded."""
    return subprocess.run(
        [str(uv_binary()), "lock", "--check", "--offline", "--no-progress"],
        cwd=project,
        env={**os.environ, "UV_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def locked_fixture(tmp_path: Path) -> Path:
    """A project locked against an index of wheels the test wrote itself (alpha 1.0 and 1.1, beta 1.0)."""
    project = fixture_project(tmp_path)
    subprocess.run(
        [str(uv_binary()), "lock", "--offline", "--no-progress"],
        cwd=project,
        env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "lock-cache")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert locked_packages(project / "uv.lock")["alpha"] == {"1.1"}
    return project


def edit_dependencies(project: Path, dependencies: list[str]) -> Path:
    (project / "pyproject.toml").write_text(pyproject_text(dependencies))
    return project


def declared_requirements() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(text) for text in [*project["dependencies"], *extras]]


def test_uv_accepts_the_lock_as_up_to_date_with_pyproject(tmp_path: Path) -> None:
    result = uv_lock_check(REPO_ROOT, tmp_path / "cache")
    assert result.returncode == 0, f"uv.lock disagrees with pyproject.toml; run `uv lock`:\n{result.stderr}"


# The checks below guard the one above against passing vacuously: the same command, on a project whose
# index the test built, accepts its own lock and refuses it after each kind of drift.


def test_the_check_accepts_a_fixture_lock_that_matches_its_pyproject(
    locked_fixture: Path, tmp_path: Path
) -> None:
    result = uv_lock_check(locked_fixture, tmp_path / "cache")
    assert result.returncode == 0, result.stderr


def test_the_check_fails_when_pyproject_drops_a_dependency_the_lock_still_has(
    locked_fixture: Path, tmp_path: Path
) -> None:
    result = uv_lock_check(edit_dependencies(locked_fixture, ["alpha>=1.0"]), tmp_path / "cache")
    assert result.returncode != 0
    assert "needs to be updated" in result.stderr, result.stderr


def test_the_check_fails_when_pyproject_excludes_a_locked_version(
    locked_fixture: Path, tmp_path: Path
) -> None:
    narrowed = edit_dependencies(locked_fixture, ["alpha>=1.0,!=1.1", "beta>=1.0"])
    result = uv_lock_check(narrowed, tmp_path / "cache")
    assert result.returncode != 0
    assert "needs to be updated" in result.stderr, result.stderr


def test_the_check_fails_when_pyproject_adds_a_dependency_the_lock_lacks(
    locked_fixture: Path, tmp_path: Path
) -> None:
    edit_dependencies(locked_fixture, ["alpha>=1.0"])
    subprocess.run(
        [str(uv_binary()), "lock", "--offline", "--no-progress"],
        cwd=locked_fixture,
        env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "relock")},
        capture_output=True,
        check=True,
    )
    result = uv_lock_check(edit_dependencies(locked_fixture, list(DEPENDENCIES)), tmp_path / "cache")
    assert result.returncode != 0
    assert "needs to be updated" in result.stderr, result.stderr


def test_every_declared_dependency_is_locked_at_a_version_its_range_allows() -> None:
    locked = locked_packages()
    for requirement in declared_requirements():
        versions = locked.get(canonicalize_name(requirement.name), set())
        assert versions, f"{requirement.name} is in pyproject.toml but not in uv.lock"
        assert all(requirement.specifier.contains(v, prereleases=True) for v in versions), (
            f"uv.lock pins {requirement.name} {sorted(versions)}, outside {requirement.specifier}"
        )


def test_the_lock_pins_one_release_of_the_sdk_and_providers_for_every_python() -> None:
    locked = locked_packages()
    for name in ("pulumi", "pulumi-kubernetes", "pulumi-aws", "pydantic"):
        assert len(locked[name]) == 1, f"{name}: {locked.get(name)}"
