"""A fresh clone, `pulumi install`, and the program runs: the Pulumi CLI's uv toolchain, step by step.

What the CLI does for `runtime.options.toolchain: uv` with `virtualenv: .venv` (github.com/pulumi/pulumi
sdk/python/toolchain/uv.go and sdk/python/cmd/pulumi-language-python-exec):
- `pulumi install` (uv.InstallDependencies): uv.lock is found, so no project is prepared; `uv sync` runs in
  the project root with UV_PROJECT_ENVIRONMENT=<root>/.venv, which creates the virtual environment;
- `pulumi preview` / `up` (uv.Command): `uv sync --inexact` again, then `<root>/.venv/bin/python` runs
  the exec shim in the project root with the venv's bin first on PATH and VIRTUAL_ENV set; the shim hands
  the engine's config to the SDK and calls runpy.run_path on the entry point, ".".
The shim needs a live engine, so the last step runs the entry point the same way under the SDK's mock
runtime (colo.mock_run). The clone is of the committed tree, as CI sees it.

This test installs from PyPI, or from uv's cache when an earlier sync filled it (`make test` has).
Leave it out with `pytest -m "not install"`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from colo.stackfiles import list_stacks, load_stack
from tests.paths import REPO_ROOT
from tests.pulumi_cli.lockfile import locked_packages, uv_binary

pytestmark = pytest.mark.install

# Runs inside the fresh environment: every checked-in stack's program under the mock runtime, the way
# the exec shim runs it, then what was imported from where and which distributions are installed.
RUN_ENTRY_POINT = """
import json, sys
from importlib import metadata
from pathlib import Path
import colo, pulumi
from colo.mock_run import run_program
from colo.stackfiles import list_stacks

declared = {}
for stack in list_stacks(Path.cwd()):
    run = run_program(stack, program=Path("."))
    declared[stack] = [resource.type for resource in run.mocks.resources]
json.dump({
    "prefix": sys.prefix,
    "pulumi": pulumi.__file__,
    "colo": colo.__file__,
    "installed": {dist.metadata["Name"]: dist.version for dist in metadata.distributions()},
    "declared": declared,
}, sys.stdout)
"""


def pulumi_cli_environment(venv: Path) -> dict[str, str]:
    """The caller's environment as the CLI passes it on: uv on PATH, nothing pointing at another venv."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT"}
    }
    env["PATH"] = os.pathsep.join([str(uv_binary().parent), env.get("PATH", "")])
    env["UV_PROJECT_ENVIRONMENT"] = str(venv)  # uv.uvCommand
    return env


def activated(env: dict[str, str], venv: Path) -> dict[str, str]:
    """toolchain.ActivateVirtualEnv: the venv's bin first on PATH, VIRTUAL_ENV set, PYTHONHOME unset."""
    return {**env, "PATH": os.pathsep.join([str(venv / "bin"), env["PATH"]]), "VIRTUAL_ENV": str(venv)}


def run(args: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("clone") / "colo"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(root)], check=True)
    venv = root / ".venv"
    env = pulumi_cli_environment(venv)
    uv = str(uv_binary())
    run([uv, "sync"], cwd=root, env=env)  # pulumi install
    run([uv, "sync", "--inexact"], cwd=root, env=env)  # pulumi preview / up, before the program
    output = run([str(venv / "bin" / "python"), "-c", RUN_ENTRY_POINT], cwd=root, env=activated(env, venv))
    result: dict[str, Any] = json.loads(output)
    result["root"] = root
    return result


def test_pulumi_install_creates_the_venv_and_the_program_imports_only_from_it(
    fresh_install: dict[str, Any],
) -> None:
    root: Path = fresh_install["root"]
    assert Path(fresh_install["prefix"]) == root / ".venv"
    assert Path(fresh_install["pulumi"]).is_relative_to(root / ".venv")
    assert Path(fresh_install["colo"]).is_relative_to(root)


def test_every_installed_package_is_the_release_uv_lock_pins(fresh_install: dict[str, Any]) -> None:
    locked = locked_packages()
    installed: dict[str, str] = {
        canonicalize_name(name): version for name, version in fresh_install["installed"].items()
    }
    for name, version in installed.items():
        assert version in locked.get(name, set()), f"{name} {version} is not what uv.lock pins"
    for program_dependency in ("pulumi", "pulumi-kubernetes", "pulumi-aws", "pydantic", "pyyaml", "boto3"):
        assert program_dependency in installed


def test_pulumi_install_leaves_the_test_tools_out(fresh_install: dict[str, Any]) -> None:
    installed = {canonicalize_name(name) for name in fresh_install["installed"]}
    assert not installed & {"pytest", "mypy", "ruff", "moto", "hypothesis"}


def test_the_entry_point_declares_every_stacks_pairs_from_the_fresh_venv(
    fresh_install: dict[str, Any],
) -> None:
    declared: dict[str, list[str]] = fresh_install["declared"]
    assert sorted(declared) == list_stacks()
    for stack, types in declared.items():
        pairs = load_stack(stack).values["pairs"]
        assert types.count("colo:index:ColocatedPair") == len(pairs), stack
        assert types.count("kubernetes:apps/v1:Deployment") == len(pairs), stack
