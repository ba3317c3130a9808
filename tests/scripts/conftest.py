"""Fixtures for the pod-script tests: a sandbox with its own PATH, and where the UUID file goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts.fakes import Sandbox


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return Sandbox(tmp_path, bin_dir)


@pytest.fixture
def uuid_file(tmp_path: Path) -> Path:
    return tmp_path / "gpu" / "uuid"
