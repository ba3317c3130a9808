"""The real Pulumi engine, when scripts/build-pulumi-engine.sh has built it; these tests skip otherwise.

Each engine run is `python -m colo.inline_engine` in its own process (the Pulumi SDK keeps process-wide
state that the mock-runtime tests in the same worker also use), against a file backend and a passphrase
secrets provider in a temporary directory, with no kubeconfig and no plugin downloads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from colo.inline_engine import Outcome, Step
from tests.built_tools import PULUMI_ENGINE_SCRIPT, absence, bin_dir_of
from tests.paths import REPO_ROOT


@dataclass(frozen=True)
class Engine:
    bin_dir: Path
    home: Path  # HOME, PULUMI_HOME and the file backend all live under it

    def environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PULUMI_", "KUBE"))}
        env.update(
            PATH=f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(self.home),
            PULUMI_HOME=str(self.home / ".pulumi"),
            PULUMI_BACKEND_URL=f"file://{self.home / 'state'}",
            PULUMI_CONFIG_PASSPHRASE="engine-tests",
            PULUMI_SKIP_UPDATE_CHECK="true",
            # The SDK asks for its own provider version (its pulumi-plugin.json); the one on PATH serves
            # any version, and nothing may be fetched from Pulumi's servers.
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
        )
        return env

    def run(
        self,
        command: str,
        stack: str,
        project: Path,
        render_dir: Path,
        program: Path | None = None,
        colo_tree: Path = REPO_ROOT,
    ) -> Outcome:
        """`program`: a __main__.py of one's own to run instead of colo's; `colo_tree`: the checkout whose colo
        package runs (another release's, for a test of an upgrade)."""
        report = project / f"{command}-{stack}.json"
        finished = subprocess.run(
            [
                sys.executable,
                "-m",
                "colo.inline_engine",
                command,
                "--stack",
                stack,
                "--project-dir",
                str(project),
                "--render-dir",
                str(render_dir),
                "--report",
                str(report),
                *(["--program", str(program)] if program else []),
            ],
            cwd=colo_tree,
            env=self.environment(),
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        # No report: the driver itself failed (before or outside the engine run).
        assert report.exists(), finished.stdout + finished.stderr
        data = json.loads(report.read_text())
        steps = [
            Step(s["op"], s["urn"], s["type"], tuple(s["diffs"]), tuple(s["replace_keys"]))
            for s in data["steps"]
        ]
        # An earlier release's driver (colo_tree) reports no outputs.
        outputs = data.get("outputs", {})
        return Outcome(data["command"], data["succeeded"], steps, data["errors"], data["output"], outputs)

    def resource_types_in_state(self, stack: str, project: Path) -> set[str]:
        """The types of every resource the backend holds for the stack (`pulumi stack export`)."""
        exported = subprocess.run(
            ["pulumi", "stack", "export", "--stack", stack, "--cwd", str(project)],
            env=self.environment(),
            capture_output=True,
            text=True,
            check=True,
        )
        resources = json.loads(exported.stdout)["deployment"].get("resources") or []
        return {str(resource["type"]) for resource in resources}


@dataclass(frozen=True)
class Deployed:
    """A preview, then an up, of one stack rendering into `rendered`."""

    project: Path
    rendered: Path
    preview: Outcome
    files_after_preview: list[Path]
    up: Outcome


def preview_then_up(
    engine: Engine, stack: str, project: Path, rendered: Path, program: Path | None = None
) -> Deployed:
    """`pulumi preview` (which must write nothing) and then `pulumi up` of the stack, each in its own process."""
    preview = engine.run("preview", stack, project, rendered, program=program)
    files = sorted(p for p in rendered.rglob("*") if p.is_file()) if rendered.exists() else []
    up = engine.run("up", stack, project, rendered, program=program)
    return Deployed(project, rendered, preview, files, up)


def project_copy(destination: Path, stacks: dict[str, Path]) -> Path:
    """Pulumi.yaml and the given stack files (name -> source) in a fresh project directory: the engine
    writes the stack's encryption salt and the render directory into the stack file it uses."""
    (destination / "stacks").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "Pulumi.yaml", destination / "Pulumi.yaml")
    for name, source in stacks.items():
        shutil.copy(source, destination / "stacks" / f"Pulumi.{name}.yaml")
    return destination


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    # Tests marked `engine` are skipped at collection when it is not built (tests/conftest.py).
    assert absence("engine") is None, absence("engine")
    home = tmp_path_factory.mktemp("engine-home")
    (home / "state").mkdir()  # the file backend's directory must exist
    return Engine(bin_dir_of(PULUMI_ENGINE_SCRIPT), home)
