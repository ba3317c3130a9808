"""`colo diff` as a workflow runs it: markdown on stdout, exit 0 / 1 / 2, and --base against git."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from tests.diff.conftest import copy_stack, remove_moe_pair, stretch_gemma_context, swap_first_llm
from tests.paths import REPO_ROOT


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_no_change_prints_that_nothing_changes_and_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = copy_stack("prod", tmp_path / "base"), copy_stack("prod", tmp_path / "head")
    code, out, _ = _diff(capsys, "--base-config", str(base), "--config", str(head))
    assert code == 0
    assert out.startswith("<!-- colo-diff:prod -->\n## colo diff `prod`: ✅ nothing changes\n")


def test_a_pair_that_stops_fitting_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = copy_stack("prod", tmp_path / "base")
    head = copy_stack("prod", tmp_path / "head", stretch_gemma_context)
    code, out, _ = _diff(capsys, "--base-config", str(base), "--config", str(head))
    assert code == 1
    assert out.index("### ⚠️ does not fit") < out.index("### Pairs")


def test_a_model_swap_that_fits_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = copy_stack("prod", tmp_path / "base")
    head = copy_stack("prod", tmp_path / "head", swap_first_llm)
    code, out, _ = _diff(capsys, "--base-config", str(base), "--config", str(head))
    assert code == 0 and "pairs: 1 changed" in out


def test_the_output_is_byte_identical_across_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = copy_stack("prod", tmp_path / "base")
    head = copy_stack("prod", tmp_path / "head", remove_moe_pair)
    first = _diff(capsys, "--base-config", str(base), "--config", str(head))
    second = _diff(capsys, "--base-config", str(base), "--config", str(head))
    assert first == second
    assert "removed" in first[1]


def test_an_invalid_head_config_exits_two_and_names_the_head_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def typo(config: dict) -> None:  # type: ignore[type-arg]
        config["colo:pairs"][0]["llm"]["maxModelLenn"] = 1

    base = copy_stack("prod", tmp_path / "base")
    head = copy_stack("prod", tmp_path / "head", typo)
    code, out, err = _diff(capsys, "--base-config", str(base), "--config", str(head))
    assert code == 2
    assert "invalid config on the head side" in out and "maxModelLenn" in out
    assert err.startswith(f"head side ({head}): invalid stack config")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def project_repo(tmp_path: Path) -> Path:
    """A git repository holding the project file, its program and the prod stack, committed once."""
    repo = tmp_path / "repo"
    copy_stack("prod", repo / "stacks")
    shutil.copy(REPO_ROOT / "Pulumi.yaml", repo / "Pulumi.yaml")
    shutil.copy(REPO_ROOT / "__main__.py", repo / "__main__.py")
    _git(repo, "init", "--quiet")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "base")
    return repo


def test_base_ref_reads_the_committed_stack_file_from_git(
    project_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_stack("prod", project_repo / "stacks", stretch_gemma_context)  # an uncommitted edit
    code, out, _ = _diff(capsys, "--stack", "prod", "--base", "HEAD", "--cwd", str(project_repo))
    assert code == 1
    assert "Base: `HEAD:stacks/Pulumi.prod.yaml`. Head: `stacks/Pulumi.prod.yaml`." in out
    assert "#### `gemma31b` (node 0 GPU 2): stops fitting" in out


def test_a_stack_missing_at_the_base_ref_is_all_added(
    project_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    (project_repo / "stacks" / "Pulumi.dev.yaml").write_text(yaml.safe_dump(dev))
    code, out, _ = _diff(capsys, "--stack", "dev", "--base", "HEAD", "--cwd", str(project_repo))
    assert code == 0
    assert "(absent there, so every pair is added)" in out
    assert "#### `rag` (node 0 GPU 0): added" in out
    assert re.search(r"^- `llm`: \d+ s \(new\)$", out, re.MULTILINE)


def test_an_unknown_base_ref_exits_two_and_names_the_base_side(
    project_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _diff(capsys, "--stack", "prod", "--base", "no-such-ref", "--cwd", str(project_repo))
    assert code == 2
    assert err.startswith("base side (no-such-ref:stacks/Pulumi.prod.yaml): invalid stack config")


def test_a_context_change_shows_the_deployment_whose_args_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def shorter_context(config: dict) -> None:  # type: ignore[type-arg]
        config["colo:pairs"][0]["llm"]["maxModelLen"] = 16384

    base = copy_stack("prod", tmp_path / "base")
    head = copy_stack("prod", tmp_path / "head", shorter_context)
    code, out, _ = _diff(capsys, "--base-config", str(base), "--config", str(head))
    objects = out[out.index("### Kubernetes objects") :]
    assert code == 0
    assert "Deployment/colo/qwen27b" in objects
    assert "args" in objects
    assert "Deployment/colo/gemma31b" not in objects  # untouched pairs are not listed
