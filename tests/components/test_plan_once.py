"""The plan is made once per program run: colo's own program plans the stack once and hands every component its
part; a component declared alone in a program of one's own plans its own part once."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

import colo
import colo.plan.stack
from colo.components import ColocatedPair, GpuNodePool, GpuNodePoolArgs
from colo.components.multi_language import ColocatedPair as OtherLanguagesPair
from colo.mock_run import run_program
from tests.components.conftest import AwsMocks, declare_under_mocks, run_under_mocks, stack_config
from tests.components.test_colocated_pair import local_pair_args
from tests.components.test_multi_language import LOCAL_PAIR


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every make_plan call from here on, by the stack it planned: the function is replaced wherever a
    module holds it, so an import of it by name is counted too. Every colo module is imported first, so a
    lazy import cannot take the counter of one test into the next."""
    for module in pkgutil.walk_packages(colo.__path__, "colo."):
        if module.name != "colo.__main__":
            importlib.import_module(module.name)
    original = colo.plan.stack.make_plan
    calls: list[str] = []

    def counting(config: Any, **kwargs: Any) -> Any:
        calls.append(",".join(pair.name for pair in config.pairs))
        return original(config, **kwargs)

    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is original:
                monkeypatch.setattr(module, name, counting)
    yield calls


@pytest.mark.parametrize("stack", ["local", "dev", "prod"])
def test_colos_program_plans_the_stack_once(stack: str, plans: list[str]) -> None:
    run_program(stack, mocks=AwsMocks())
    assert len(plans) == 1, plans


def test_the_counter_counts_every_plan(plans: list[str]) -> None:
    """Guards the counts here: a plan made through the module attribute is seen too."""
    colo.plan.stack.make_plan(stack_config("local"))
    assert plans == ["chat"]


def test_a_pair_alone_plans_its_pair_once(plans: list[str]) -> None:
    run_under_mocks(lambda: {"urn": ColocatedPair("chat", local_pair_args()).urn})
    assert plans == ["chat"]


def test_a_node_pool_alone_plans_its_pairs_once(plans: list[str]) -> None:
    config = stack_config("prod")
    declare_under_mocks(lambda: GpuNodePool(config.cluster.name, GpuNodePoolArgs.of_stack(config)))
    assert plans == ["qwen27b,qwen35b-moe,gemma31b"]


def test_a_pair_from_another_language_plans_its_pair_once(plans: list[str]) -> None:
    def build() -> dict[str, pulumi.Input[Any]]:
        return {"urn": OtherLanguagesPair("chat", LOCAL_PAIR).urn}

    run_under_mocks(build)
    assert plans == ["chat"]
