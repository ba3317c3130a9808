"""Read the base side of a diff from git: a stack file as it was at a ref, or nothing if it did not exist."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from colo.errors import ConfigError, Problem
from colo.stackfiles import StackFile, load_stack_file


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def git_show(ref: str, path: Path) -> str | None:
    """`path`'s text at `ref`, or None when the file did not exist there. A bad ref is a ConfigError."""
    cwd = path.parent
    # `<ref>^{commit}` refuses a ref that is not a commit, so a typo is reported instead of read as "empty"
    verified = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)
    if verified.returncode != 0:
        detail = verified.stderr.strip() or "not a commit"
        raise ConfigError([Problem(f"--base {ref}", f"not a git commit in {cwd}: {detail}")])
    # `./name` resolves against cwd, so this works wherever the project sits inside the repository
    spec = f"{verified.stdout.strip()}:./{path.name}"
    if _git(["cat-file", "-e", spec], cwd).returncode != 0:
        return None
    return _git(["show", spec], cwd).stdout


def stack_file_at(ref: str, stack_path: Path, project_file: Path, stack: str) -> StackFile | None:
    """The stack file merged with Pulumi.yaml as both were at `ref`; None if the stack did not exist there.

    If Pulumi.yaml itself did not exist at `ref`, today's is used: its defaults are the best guess. The
    program that renders it is today's, run in today's project directory.
    """
    text = git_show(ref, stack_path)
    if text is None:
        return None
    project_text = git_show(ref, project_file)
    if project_text is None:
        project_text = project_file.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        base_stack = Path(tmp) / stack_path.name
        base_project = Path(tmp) / "Pulumi.yaml"
        base_stack.write_text(text)
        base_project.write_text(project_text)
        then = load_stack_file(base_stack, project_file=base_project, stack=stack)
    today = load_stack_file(stack_path, project_file=project_file, stack=stack)
    return replace(then, project_dir=today.project_dir, program=today.program)
