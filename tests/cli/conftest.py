"""Render every checked-in stack once per worker into a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from colo.cli import main
from colo.stackfiles import list_stacks


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for stack in list_stacks():
        directory = tmp_path_factory.mktemp(f"render-{stack}")
        assert main(["render", "--stack", stack, "--out", str(directory)]) == 0
        out[stack] = directory
    return out
