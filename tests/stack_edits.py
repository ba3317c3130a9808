"""The local stack's file, edited and written elsewhere: for CLI tests that run colo on a stack of their own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.paths import REPO_ROOT


def edited_local_stack(directory: Path, edit: Callable[[dict[str, Any]], None], name: str = "edited") -> Path:
    """stacks/Pulumi.local.yaml with `edit` applied to its `config` mapping, as `directory`/Pulumi.<name>.yaml."""
    values = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.local.yaml").read_text())
    edit(values["config"])
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(values))
    return path
