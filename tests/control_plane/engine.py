"""The real Pulumi engine (scripts/build-pulumi-engine.sh) deploying colo's inline program to the control plane.

Each run is its own process, as in tests/engine, with the Kubernetes provider pointed at the loopback API
server through KUBECONFIG (the engine applies the objects itself: no render directory); the program is colo's
inline one (colo.inline_engine.select_stack), driven by tests/control_plane/engine_driver.py. A lifecycle runs
`up`, an edited `up` and `destroy` against one backend and keeps what the API server held after each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from colo.inline_engine import Outcome, Step
from tests.engine.conftest import Engine
from tests.paths import REPO_ROOT

ENGINE_TIMEOUT = 300


@dataclass(frozen=True)
class Run:
    outcome: Outcome
    # severity, urn, message: what `pulumi up` lists under "Diagnostics:"
    diagnostics: list[dict[str, str | None]]

    def messages(self, severity: str) -> list[str]:
        return [str(d["message"]) for d in self.diagnostics if d["severity"] == severity]


# The context tests/control_plane/cluster.py writes into the control plane's kubeconfig.
CONTEXT = "colo-test"


@dataclass(frozen=True)
class EngineOnCluster:
    engine: Engine
    kubeconfig: Path
    server: str  # the control plane's API server

    def aim(self, stack_file: Path, server: str | None = None) -> None:
        """Name the control plane as the stack's cluster, as a user names theirs: its context and its API
        server (`server` names another, for a stack that is not this cluster's)."""

        def named(config: dict[str, Any]) -> None:
            cluster = {
                **config["colo:cluster"],
                "kubeconfigContext": CONTEXT,
                "apiServer": server or self.server,
            }
            config["colo:cluster"] = cluster

        edit_stack_file(stack_file, named)

    def run(self, command: str, stack: str, project: Path) -> Run:
        """`up` or `destroy` of `stack` (tests/control_plane/engine_driver.py), in its own process."""
        report = project / f"{command}-{stack}-{len(list(project.glob('*.json')))}.json"
        env = {**self.engine.environment(), "KUBECONFIG": str(self.kubeconfig)}
        finished = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.control_plane.engine_driver",
                command,
                "--stack",
                stack,
                "--project-dir",
                str(project),
                "--report",
                str(report),
            ],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=ENGINE_TIMEOUT,
            start_new_session=True,  # whatever the engine signals to its process group stays with it
        )
        assert report.exists(), finished.stdout + finished.stderr
        data = json.loads(report.read_text())
        steps = [
            Step(s["op"], s["urn"], s["type"], tuple(s["diffs"]), tuple(s["replace_keys"]))
            for s in data["steps"]
        ]
        outcome = Outcome(data["command"], data["succeeded"], steps, data["errors"], data["output"])
        return Run(outcome, data["diagnostics"])


def kubernetes_steps(outcome: Outcome) -> list[Step]:
    """The steps on Kubernetes objects, leaving out colo's components and the default provider."""
    return [step for step in outcome.steps if step.type.startswith("kubernetes:")]


def edit_stack_file(path: Path, edit: Any) -> None:
    """Rewrite a stack file in place through `edit(config)`, keeping what the engine wrote into it."""
    source: dict[str, Any] = yaml.safe_load(path.read_text())
    edit(source["config"])
    path.write_text(yaml.safe_dump(source, sort_keys=False))
