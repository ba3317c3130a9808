"""Run colo's program under the real Pulumi engine, with this Python process as its language host.

An Automation API inline program makes the `pulumi` CLI call back into this process instead of starting
pulumi-language-python, so where that binary is missing the engine, the providers, the config checks
against Pulumi.yaml and the state backend are still the real ones:

    python -m colo.inline_engine preview --stack local
    python -m colo.inline_engine up --stack local --render-dir out/

behave as `pulumi preview` / `pulumi up --yes` run in the project directory. `--program PATH` runs
another project's program instead (a `__main__.py` of one's own that uses colo's components), in its
directory, under its Pulumi.yaml's project name. The CLI and the providers
are taken from PATH; the backend and the secrets passphrase from the usual PULUMI_* variables. As with
`pulumi stack init`, a stack new to the backend gets its encryption salt written into its stack file;
`--render-dir` is set for the one run and taken out again, so the stack file keeps the user's settings.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import runpy
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from colo.program import handed_over
from colo.program import run as colo_program
from colo.stackfiles import load_stack, require_project

PROJECT = "colo"
RENDER_KEY = "kubernetes:renderYamlToDirectory"
SECRET_OUTPUT = "[secret]"


@dataclass(frozen=True)
class Step:
    """One resource step as the engine announced it (ResourcePreEvent)."""

    op: str  # same, create, update, replace, delete, ...
    urn: str
    type: str
    diffs: tuple[str, ...]  # property paths that differ from the last deployment, e.g. spec.template
    replace_keys: tuple[str, ...]  # the keys that force a replacement, when op is a replace

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass
class Outcome:
    """What one engine run did: its steps in order, the engine's error messages, its text output, and the
    stack's outputs after an `up` (what the program exported; a secret one as SECRET_OUTPUT)."""

    command: str
    succeeded: bool
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    output: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)

    def changed(self) -> list[Step]:
        return [step for step in self.steps if step.op != "same"]


class _Recorder:
    def __init__(self, echo: Callable[[str], None] | None) -> None:
        self.steps: list[Step] = []
        self.errors: list[str] = []
        self.lines: list[str] = []
        self.echo = echo

    def output(self, line: str) -> None:
        self.lines.append(line)
        if self.echo:
            self.echo(line)

    def event(self, event: auto.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            meta = event.resource_pre_event.metadata
            self.steps.append(
                Step(
                    op=str(meta.op.value),
                    urn=meta.urn,
                    type=meta.type,
                    # The provider's detailed diff names the changed paths; `diffs` is often left empty.
                    diffs=tuple(sorted({*(meta.diffs or ()), *(meta.detailed_diff or {})})),
                    replace_keys=tuple(meta.keys or ()),
                )
            )
        diagnostic = event.diagnostic_event
        if diagnostic is not None and diagnostic.severity == "error":
            self.errors.append(diagnostic.message)

    def outcome(self, command: str, succeeded: bool, outputs: dict[str, Any] | None = None) -> Outcome:
        return Outcome(command, succeeded, self.steps, self.errors, "\n".join(self.lines), outputs or {})


def project_program(path: Path) -> Callable[[], None]:
    """A project's `__main__.py` as an inline program, run in its directory as the Pulumi CLI runs it."""

    def run() -> None:
        with contextlib.chdir(path.parent):
            runpy.run_path(str(path), run_name="__main__")

    return run


def _project_name(project_dir: Path) -> str:
    project = yaml.safe_load((project_dir / "Pulumi.yaml").read_text()) or {}
    return str(project.get("name", PROJECT))


def handing_over(stack: str, project_dir: Path, program: Callable[[], None]) -> Callable[[], None]:
    """`program`, told the config keys the engine hands it: the SDK takes them from the engine here
    (set_all_config) and lists them back nowhere public, so they are read where the engine reads them, the
    stack file merged with Pulumi.yaml's defaults, at each run (a `pulumi config set` in between counts)."""

    def run() -> None:
        config, _ = load_stack(stack, project_dir).engine_config()
        with handed_over(config):
            program()

    return run


def select_stack(
    stack: str, project_dir: Path | None = None, program: Callable[[], None] | None = None
) -> auto.Stack:
    """The stack in `project_dir` (Pulumi.yaml and its stackConfigDir; default the project found from the
    working directory), created on first use with the passphrase secrets provider when the backend has no
    such stack yet. `program` defaults to colo's own."""
    project_dir = project_dir or require_project().parent
    options = auto.LocalWorkspaceOptions(work_dir=str(project_dir), secrets_provider="passphrase")
    return auto.create_or_select_stack(
        stack,
        project_name=_project_name(project_dir),
        program=handing_over(stack, project_dir, program or colo_program),
        opts=options,
    )


def render_to(stack: auto.Stack, directory: Path) -> str | None:
    """Point the Kubernetes provider at a directory: it writes manifests there instead of applying them.
    Returns the setting the stack had before, for `restore_render` (the stack file is the user's)."""
    previous = stack.get_all_config().get(RENDER_KEY)
    stack.set_config(RENDER_KEY, auto.ConfigValue(str(directory.resolve())))
    return previous.value if previous is not None else None


def restore_render(stack: auto.Stack, previous: str | None) -> None:
    """Put the stack's render setting back as it was, so a later `pulumi up` deploys as the user configured."""
    if previous is None:
        stack.remove_config(RENDER_KEY)
    else:
        stack.set_config(RENDER_KEY, auto.ConfigValue(previous))


def run(stack: auto.Stack, command: str, *, echo: Callable[[str], None] | None = None) -> Outcome:
    """`preview` or `up` (never asks for confirmation); a refusal or engine failure is an Outcome too."""
    recorder = _Recorder(echo)
    outputs: dict[str, Any] = {}
    try:
        if command == "preview":
            stack.preview(on_output=recorder.output, on_event=recorder.event, diff=True, color="never")
        elif command == "up":
            result = stack.up(on_output=recorder.output, on_event=recorder.event, diff=True, color="never")
            outputs = {k: SECRET_OUTPUT if v.secret else v.value for k, v in result.outputs.items()}
        else:
            raise ValueError(f"unknown command {command!r}: preview or up")
    except auto.CommandError:
        # The message worth showing is in the engine's diagnostics and output, which the recorder kept.
        return recorder.outcome(command, succeeded=False)
    return recorder.outcome(command, succeeded=True, outputs=outputs)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m colo.inline_engine", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["preview", "up"])
    parser.add_argument("--stack", required=True, help="stack name (Pulumi.<stack>.yaml in stackConfigDir)")
    parser.add_argument(
        "--project-dir",
        type=Path,
        help="directory holding Pulumi.yaml (default: found from the working directory)",
    )
    parser.add_argument(
        "--render-dir", type=Path, help=f"set {RENDER_KEY} first: write manifests here, apply nothing"
    )
    parser.add_argument("--report", type=Path, help="also write the steps and errors as JSON here")
    parser.add_argument(
        "--program", type=Path, help="run this __main__.py (a program of one's own) instead of colo's"
    )
    return parser.parse_args(argv)


NO_CLI = (
    "python -m colo.inline_engine drives the Pulumi CLI (the engine, the providers, the state backend), and "
    "there is no `pulumi` on PATH: install it (or put its bin directory on PATH); without it, `colo render "
    "--cwd PROJECT_DIR --stack STACK --out DIR` runs the same program under Pulumi's mock runtime and writes "
    "its objects"
)


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    if shutil.which("pulumi") is None:
        print(NO_CLI, file=sys.stderr)
        return 2
    program = project_program(args.program.resolve()) if args.program else None
    stack = select_stack(args.stack, args.project_dir, program)
    if args.render_dir is None:
        outcome = run(stack, args.command, echo=print)
    else:
        previous = render_to(stack, args.render_dir)
        try:
            outcome = run(stack, args.command, echo=print)
        finally:
            restore_render(stack, previous)
    if args.report is not None:
        args.report.write_text(json.dumps(asdict(outcome), indent=2) + "\n")
    for message in outcome.errors:
        print(message, file=sys.stderr)
    return 0 if outcome.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
