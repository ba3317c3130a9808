"""Fixtures for components: stack configs and plans, and a way to declare one component under mocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings

from colo.cli.common import load_config
from colo.config import StackConfig
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack
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
    settings.ROOT.set(None)
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
