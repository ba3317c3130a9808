"""Run the real Pulumi program (__main__.py) under the SDK's mock runtime and record what it declares.

The Pulumi CLI is not needed: the stack file is merged with Pulumi.yaml the way the CLI does it
(colo.stackfiles), handed to the SDK with set_all_config, and every resource registration is recorded.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import settings

from colo.stackfiles import REPO_ROOT, StackFile, load_stack

SECRET_PLACEHOLDER = "mock-secret-value"


@dataclass
class Recorded:
    type: str
    name: str
    inputs: dict[str, Any]
    provider: str | None
    custom: bool


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
        self.invokes = invokes

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(Recorded(args.typ, args.name, dict(args.inputs), args.provider, args.custom))
        state = dict(args.inputs)
        state.setdefault("arn", f"arn:aws:mock:::{args.name}")
        state.setdefault("id", f"{args.name}-id")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return self.invokes(args.token, dict(args.args))

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_]


@dataclass
class ProgramRun:
    mocks: RecordingMocks
    outputs: dict[str, Any] = field(default_factory=dict)


def run_program(
    stack: str | StackFile,
    *,
    preview: bool = False,
    mocks: RecordingMocks | None = None,
    program: Path = REPO_ROOT / "__main__.py",
) -> ProgramRun:
    """Execute the program once; resources are in `.mocks.resources`, exported outputs in `.outputs`."""
    stack_file = load_stack(stack) if isinstance(stack, str) else stack
    config, secret_keys = stack_file.engine_config(SECRET_PLACEHOLDER)
    mocks = mocks or RecordingMocks()
    settings.ROOT.set(None)  # private API: a fresh root Stack for every run in this process
    pulumi.runtime.set_all_config(config, secret_keys)
    pulumi.runtime.set_mocks(mocks, project=stack_file.project, stack=stack_file.stack, preview=preview)
    result = ProgramRun(mocks)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> pulumi.Output[None]:
        runpy.run_path(str(program), run_name="__main__")
        root = settings.get_root_resource()
        assert root is not None
        return pulumi.Output.all(**root.outputs).apply(result.outputs.update)  # type: ignore[attr-defined]

    _run()
    return result
