"""The example program (examples/colocated-pair) as its tests run it: copied, with its stack's settings changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from colo.stackfiles import StackFile, load_stack
from tests.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "colocated-pair"
PROJECT = "colo-example"
STACK = "dev"
PAIR_TYPE = "colo:index:ColocatedPair"
# What a pair that does not fit stops at: past Qwen3-8B-FP8's 40,960 positions.
TOO_LONG = 65536


def example_copy(destination: Path, **settings: Any) -> Path:
    """The example's files in `destination`, its dev stack's settings (`maxModelLen=...`) changed."""
    destination.mkdir(parents=True)
    for name in ("Pulumi.yaml", f"Pulumi.{STACK}.yaml", "__main__.py"):
        shutil.copy(EXAMPLE / name, destination / name)
    stack_path = destination / f"Pulumi.{STACK}.yaml"
    stack = yaml.safe_load(stack_path.read_text())
    stack["config"].update({f"{PROJECT}:{key}": value for key, value in settings.items()})
    stack_path.write_text(yaml.safe_dump(stack, sort_keys=False))
    return destination


def example_stack(project: Path = EXAMPLE) -> StackFile:
    return load_stack(STACK, start=project)
