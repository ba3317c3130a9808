"""Commands find the project the way the Pulumi CLI does: the nearest Pulumi.yaml from the working
directory up, or from --cwd; nothing is looked up next to where colo is installed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from colo.cli import main
from colo.stackfiles import find_project, list_stacks
from tests.model_files import TINY_CONFIG
from tests.paths import REPO_ROOT


def _project(root: Path) -> Path:
    """A project directory of its own: Pulumi.yaml, the program and the stacks, as a user keeps them."""
    root.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copy(REPO_ROOT / "__main__.py", root / "__main__.py")
    shutil.copytree(REPO_ROOT / "stacks", root / "stacks")
    return root


def test_the_nearest_project_file_from_a_subdirectory_is_found(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    deep = project / "notes" / "deeper"
    deep.mkdir(parents=True)
    assert find_project(deep) == project / "Pulumi.yaml"
    assert list_stacks(deep) == ["dev", "local", "prod", "tp"]


def test_plan_runs_on_the_project_that_cwd_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path / "project")
    (project / "stacks" / "Pulumi.mine.yaml").write_text(
        (project / "stacks" / "Pulumi.local.yaml").read_text()
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["plan", "--stack", "mine", "--cwd", str(project / "stacks")]) == 0
    assert "pair chat" in capsys.readouterr().out


def test_render_runs_the_program_of_the_project_found_from_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path / "project")
    monkeypatch.chdir(project / "stacks")
    assert main(["render", "--stack", "local", "--out", str(tmp_path / "out")]) == 0
    assert list((tmp_path / "out").rglob("*-deployment-chat.yaml"))


def test_outside_any_project_a_stack_is_refused_naming_the_directory_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if find_project(tmp_path) is not None:
        pytest.skip("a Pulumi.yaml sits above the temporary directory")
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--stack", "local"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err
    assert "no Pulumi.yaml here or in any directory above" in err
    assert "--cwd" in err


def test_a_relative_profile_path_is_read_from_the_project_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path / "project")
    profile = project / "profiles" / "qwen3-8b-fp8.json"
    profile.parent.mkdir()
    profile.write_text(json.dumps({**TINY_CONFIG, "max_position_embeddings": 40960}))
    stack = project / "stacks" / "Pulumi.local.yaml"
    stack.write_text(
        stack.read_text().replace(
            "model: Qwen/Qwen3-8B-FP8",
            "model: Qwen/Qwen3-8B-FP8\n        profile: profiles/qwen3-8b-fp8.json",
        )
    )
    monkeypatch.chdir(project / "stacks")
    assert main(["plan", "--stack", "local", "--format", "json"]) == 0
    (pair,) = json.loads(capsys.readouterr().out)["pairs"]
    llm = next(server for server in pair["servers"] if server["name"] == "chat-llm")
    assert llm["memory"]["weights_gib"] < 0.01  # the tiny profile's weights, not the catalog's 8B
