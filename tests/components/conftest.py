"""Whole-program runs shared by the component tests (each stack once per worker, in both modes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest

from colo.mock_run import ProgramRun, run_program
from colo.stackfiles import StackFile, list_stacks


@cache
def _run(stack: str, preview: bool) -> ProgramRun:
    return run_program(stack, preview=preview)


@pytest.fixture(params=list_stacks())
def stack_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def checked_in_run() -> Callable[[str, bool], ProgramRun]:
    return _run


@pytest.fixture
def run_variant() -> Callable[[StackFile], ProgramRun]:
    def run(stack_file: StackFile) -> ProgramRun:
        return run_program(stack_file)

    return run
