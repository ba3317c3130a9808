"""Fixtures for components: stack configs and plans, one component under mocks, or the whole program."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import pulumi
import pytest

from colo.cli.common import load_config
from colo.config import StackConfig
from colo.mock_run import OptionsRecorder, ProgramRun, run_program
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import StackFile, list_stacks, load_stack
from tests.harness import RecordingMocks


class AwsMocks(RecordingMocks):
    """Adds the computed outputs AWS fills in that the node pool reads."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            state.setdefault("latestVersion", 1)
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            state.setdefault("nodeGroupName", f"{args.name}-generated")
        return resource_id, state


def stack_config(stack: str, **node_pool: Any) -> StackConfig:
    config = load_config(load_stack(stack))
    if node_pool:
        pool = config.node_pool.model_copy(update=node_pool)
        config = config.model_copy(update={"node_pool": pool})
    return config


@pytest.fixture
def prod_config() -> StackConfig:
    return stack_config("prod")


@pytest.fixture
def prod_plan(prod_config: StackConfig) -> Plan:
    return make_plan(prod_config)


Declare = Callable[..., tuple[AwsMocks, dict[str, Any]]]


def declare_under_mocks(
    build: Callable[[], pulumi.Resource | None],
    *,
    mocks: AwsMocks | None = None,
    preview: bool = False,
) -> tuple[AwsMocks, dict[str, Any]]:
    """Run `build` in a fresh mocked stack; apply() errors propagate. Returns the mocks and its outputs."""
    mocks = mocks or AwsMocks()
    pulumi.runtime.reset_options()
    pulumi.runtime.set_all_config({})  # a whole-program run before this one left its stack's config
    pulumi.runtime.set_mocks(mocks, project="colo", stack="test", preview=preview)
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> pulumi.Output[None] | None:
        resource = build()
        if resource is None:
            return None
        names = {"nodeGroupName": resource.node_group_name, "nodeRoleArn": resource.node_role_arn}  # type: ignore[attr-defined]
        return pulumi.Output.all(**names).apply(outputs.update)

    _run()
    return mocks, outputs


def run_under_mocks(
    build: Callable[[], Mapping[str, pulumi.Input[Any]]],
    *,
    mocks: AwsMocks | None = None,
    preview: bool = False,
) -> tuple[AwsMocks, dict[str, Any]]:
    """Run `build` in a fresh mocked stack, as a program of one's own would run; the outputs it returns come
    back resolved, and every resource's options (its parent) are recorded in `mocks.options`."""
    mocks = mocks or AwsMocks()
    pulumi.runtime.reset_options()
    pulumi.runtime.set_all_config({})  # a whole-program run before this one left its stack's config
    pulumi.runtime.set_mocks(mocks, project="own-program", stack="test", preview=preview)
    recorder = OptionsRecorder()
    pulumi.runtime.register_stack_transformation(recorder)
    outputs: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def _run() -> pulumi.Output[Any]:
        resolved = pulumi.Output.all(**build()).apply(outputs.update)
        return pulumi.Output.all(resolved, recorder.resolve_into(mocks))

    _run()
    return mocks, outputs


@cache
def _run(stack: str, preview: bool) -> ProgramRun:
    return run_program(stack, preview=preview, mocks=AwsMocks())


@pytest.fixture(params=list_stacks())
def stack_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def checked_in_run() -> Callable[[str, bool], ProgramRun]:
    """Whole-program runs of the checked-in stacks, each stack once per worker and mode."""
    return _run


@pytest.fixture
def run_variant() -> Callable[[StackFile], ProgramRun]:
    def run(stack_file: StackFile) -> ProgramRun:
        return run_program(stack_file, mocks=AwsMocks())

    return run
