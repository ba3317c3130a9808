"""The example's requirements.txt is what uv.lock pins, by hash: generated, and never stale."""

from __future__ import annotations

import importlib.util
import re

from tests.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "update-example-requirements.py"
REQUIREMENTS = REPO_ROOT / "examples" / "colocated-pair" / "requirements.txt"


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("update_example_requirements", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_requirements_are_the_locks_current_export() -> None:
    assert REQUIREMENTS.read_text() == _script().expected(), (
        "stale: run python scripts/update-example-requirements.py"
    )


def test_every_requirement_is_pinned_to_one_version_and_checked_by_hash() -> None:
    entries = re.split(r"\n(?=[A-Za-z0-9])", REQUIREMENTS.read_text().split("\n", 4)[4])
    assert len(entries) > 30
    for entry in entries:
        name = entry.split()[0]
        assert "==" in name and "--hash=sha256:" in entry, entry
    assert not any(line.startswith(("-e", ".")) for line in REQUIREMENTS.read_text().splitlines())
