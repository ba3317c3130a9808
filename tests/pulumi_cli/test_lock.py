"""uv.lock pins exactly what pyproject.toml asks for: a dependency added, dropped or re-ranged without
re-locking fails here (run `uv lock`, or `make lock` to upgrade everything)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.paths import REPO_ROOT
from tests.pulumi_cli.lockfile import LOCK, locked_packages, uv_binary

PYPROJECT = REPO_ROOT / "pyproject.toml"


def uv_lock_check(project: Path) -> subprocess.CompletedProcess[str]:
    """uv's own check that the lock satisfies pyproject.toml; offline, so a stale lock cannot re-resolve."""
    return subprocess.run(
        [str(uv_binary()), "lock", "--check", "--offline", "--no-progress"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def copy_project(into: Path, pyproject: str) -> Path:
    (into / "pyproject.toml").write_text(pyproject)
    shutil.copy(LOCK, into / "uv.lock")
    return into


def declared_requirements() -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(text) for text in [*project["dependencies"], *extras]]


def test_uv_accepts_the_lock_as_up_to_date_with_pyproject() -> None:
    result = uv_lock_check(REPO_ROOT)
    assert result.returncode == 0, f"uv.lock disagrees with pyproject.toml; run `uv lock`:\n{result.stderr}"


def test_the_check_fails_when_pyproject_drops_a_dependency_the_lock_still_has(tmp_path: Path) -> None:
    """Guards the test above against passing vacuously."""
    pyproject = PYPROJECT.read_text()
    assert '  "pyyaml>=6.0,<7",\n' in pyproject
    result = uv_lock_check(copy_project(tmp_path, pyproject.replace('  "pyyaml>=6.0,<7",\n', "")))
    assert result.returncode != 0 and "needs to be updated" in result.stderr


def test_the_check_fails_when_pyproject_excludes_a_locked_version(tmp_path: Path) -> None:
    (pinned,) = locked_packages()["pydantic"]
    pyproject = PYPROJECT.read_text()
    assert '"pydantic>=2.7,<3"' in pyproject
    narrowed = pyproject.replace('"pydantic>=2.7,<3"', f'"pydantic>=2.7,!={pinned}"')
    assert uv_lock_check(copy_project(tmp_path, narrowed)).returncode != 0


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
