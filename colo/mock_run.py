"""Run the real Pulumi program (__main__.py) under the SDK's mock runtime and record what it declares.

The Pulumi CLI is not needed: the stack file is merged with Pulumi.yaml the way the CLI does it
(colo.stackfiles), handed to the SDK with set_all_config, the project's program runs in the project
directory as the CLI runs it, and every resource registration is recorded.

Only public SDK API is used: reset_options, set_all_config, set_mocks and the Mocks interface, a stack
transformation for resource options, get_root_resource. What the SDK offers no public way to read back,
the config keys handed over and what the program exported, travels through colo.program.handed_over.
tests/cli/test_pulumi_sdk.py checks each of these on the lowest and the newest SDK in pyproject's range.
"""

from __future__ import annotations

import contextlib
import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from colo.errors import ConfigError, Problem
from colo.program import handed_over, run
from colo.stackfiles import MOCK_SECRET_VALUE, StackFile, load_stack

RENDER_CONFIG_KEY = "kubernetes:renderYamlToDirectory"


@dataclass
class Recorded:
    type: str
    name: str
    inputs: dict[str, Any]
    provider: str | None
    custom: bool


@dataclass(frozen=True)
class RecordedOptions:
    """Resource options the engine would act on; the mock runtime only passes them along."""

    parent: str  # the parent's URN
    delete_before_replace: bool
    custom_timeouts: dict[str, str]


InvokeHandler = Callable[[str, dict[str, Any]], dict[str, Any]]


def default_invokes(token: str, args: dict[str, Any]) -> dict[str, Any]:
    if token == "aws:ec2/getInstanceType:getInstanceType":
        from colo.catalog import gpu, instance_type

        known = instance_type(str(args["instanceType"]))
        if known is None:
            raise KeyError(f"instance type {args['instanceType']} not mocked")
        spec = gpu(known.gpu)
        mib = spec.ec2_memory_mib or 0
        return {
            "instanceType": known.name,
            "defaultVcpus": known.vcpus,
            "memorySize": known.memory_mib,
            "gpuses": [{"count": known.gpus, "manufacturer": "NVIDIA", "name": known.gpu, "memorySize": mib}],
            "totalGpuMemory": mib * known.gpus,
        }
    if token == "aws:eks/getCluster:getCluster":
        return {
            "name": args["name"],
            "endpoint": "https://example.eks.amazonaws.com",
            "version": "1.34",
            "vpcConfig": {"subnetIds": ["subnet-a"]},
            "certificateAuthorities": [{"data": "Zm9v"}],
        }
    raise KeyError(f"unmocked invoke {token}")


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self, invokes: InvokeHandler = default_invokes) -> None:
        self.resources: list[Recorded] = []
        self.options: dict[tuple[str, str], RecordedOptions] = {}
        self.invokes = invokes

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(
            Recorded(args.typ, args.name, dict(args.inputs), args.provider, bool(args.custom))
        )
        state = dict(args.inputs)
        state.setdefault("arn", f"arn:aws:mock:::{args.name}")
        state.setdefault("id", f"{args.name}-id")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return self.invokes(args.token, dict(args.args)), []

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_]

    def options_of(self, resource: Recorded) -> RecordedOptions:
        return self.options[(resource.type, resource.name)]


class OptionsRecorder:
    """A stack transformation that notes the options each resource is declared with (Mocks.new_resource
    never sees them). Parents are resolved to their URNs once the program has run."""

    def __init__(self) -> None:
        self._declared: list[tuple[str, str, pulumi.Resource, pulumi.ResourceOptions]] = []

    def __call__(self, args: pulumi.ResourceTransformationArgs) -> None:
        parent = args.opts.parent or pulumi.runtime.get_root_resource()
        assert parent is not None
        self._declared.append((args.type_, args.name, parent, args.opts))

    def resolve_into(self, mocks: RecordingMocks) -> pulumi.Output[None]:
        def record(parents: list[str]) -> None:
            for (type_, name, _, opts), parent in zip(self._declared, parents, strict=True):
                timeouts = opts.custom_timeouts
                mocks.options[(type_, name)] = RecordedOptions(
                    parent=parent,
                    delete_before_replace=bool(opts.delete_before_replace),
                    custom_timeouts={
                        key: value
                        for key, value in (
                            ("create", timeouts.create if timeouts else None),
                            ("update", timeouts.update if timeouts else None),
                            ("delete", timeouts.delete if timeouts else None),
                        )
                        if value
                    },
                )

        return pulumi.Output.all(*(parent.urn for _, _, parent, _ in self._declared)).apply(record)


def _project_program(stack_file: StackFile) -> Path | None:
    """The project's program; None for a stack file read without a project, which runs colo's own
    (colo.program.run, all a project's __main__.py calls)."""
    program = stack_file.program
    if program is None:
        return None
    entry = program / "__main__.py" if program.is_dir() else program
    if not entry.is_file():
        raise ConfigError(
            [
                Problem(
                    "Pulumi.yaml",
                    f"the program to run is the project's (its `main`, else __main__.py next to Pulumi.yaml), "
                    f"and {entry} does not exist",
                )
            ]
        )
    return program


def _execute(program: Path | None) -> None:
    if program is None:
        run()
    else:
        runpy.run_path(str(program), run_name="__main__")


@dataclass
class ProgramRun:
    mocks: RecordingMocks
    outputs: dict[str, Any] = field(default_factory=dict)  # what it exported with colo.program.export


# What the program is told to render into when it runs under mocks: nothing is written there (the mocks
# record what it declares), but like the engine with kubernetes:renderYamlToDirectory set, the program
# reaches for no cluster.
RENDER_DIR = "manifests"


def run_program(
    stack: str | StackFile,
    *,
    preview: bool = False,
    mocks: RecordingMocks | None = None,
    program: Path | None = None,
    render_dir: str | None = RENDER_DIR,
) -> ProgramRun:
    """Execute the program once; resources are in `.mocks.resources`, what it exported through
    colo.program.export (colo's program exports its plan so) in `.outputs`.

    `program` defaults to the project's (Pulumi.yaml `main`, else its directory's __main__.py), and to
    colo's own for a stack file read without a project. `render_dir` is set as
    kubernetes:renderYamlToDirectory unless the stack sets it; None runs the program as `pulumi up` does
    against the stack's cluster (its kubeconfig context is read)."""
    stack_file = load_stack(stack) if isinstance(stack, str) else stack
    program = program or _project_program(stack_file)
    config, secret_keys = stack_file.engine_config(MOCK_SECRET_VALUE)
    if render_dir is not None:
        config.setdefault(RENDER_CONFIG_KEY, render_dir)
    mocks = mocks or RecordingMocks()
    pulumi.runtime.reset_options()  # a fresh root Stack for every run in this process
    pulumi.runtime.set_all_config(config, secret_keys)
    pulumi.runtime.set_mocks(mocks, project=stack_file.project, stack=stack_file.stack, preview=preview)
    recorder = OptionsRecorder()
    pulumi.runtime.register_stack_transformation(recorder)
    result = ProgramRun(mocks)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> pulumi.Output[Any]:
        with contextlib.chdir(stack_file.project_dir or Path.cwd()), handed_over(config) as handover:
            _execute(program)
        exported = pulumi.Output.all(**handover.exports).apply(result.outputs.update)
        return pulumi.Output.all(exported, recorder.resolve_into(mocks))

    _run()
    return result
