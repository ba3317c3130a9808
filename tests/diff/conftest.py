"""Real stack edits for diff tests: copy a file from stacks/, change it the way a PR would, plan it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli.common import load_config
from colo.cli.plan_cmd import build_plan
from colo.plan.stack import Plan
from colo.stackfiles import load_stack_file
from tests.paths import REPO_ROOT

Edit = Callable[[dict[str, Any]], None]  # changes the `config:` mapping of a stack file in place
StackCopy = Callable[..., Path]


def copy_stack(stack: str, dest: Path, edit: Edit | None = None) -> Path:
    """stacks/Pulumi.<stack>.yaml copied to dest/, keeping its name (so the stack name is unchanged)."""
    source = REPO_ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / source.name
    if edit is None:
        target.write_text(source.read_text())
        return target
    document = yaml.safe_load(source.read_text())
    edit(document["config"])
    target.write_text(yaml.safe_dump(document, sort_keys=False))
    return target


def plan_file(path: Path) -> Plan:
    return build_plan(load_config(load_stack_file(path)))


@pytest.fixture
def stack_copy(tmp_path: Path) -> StackCopy:
    """stack_copy("prod", "head", edit) -> path of an edited copy under tmp_path/head/."""

    def make(stack: str, side: str, edit: Edit | None = None) -> Path:
        return copy_stack(stack, tmp_path / side, edit)

    return make


# Edits a PR might make to the prod stack (the field report's three L40S pairs).
def swap_first_llm(config: dict[str, Any]) -> None:
    config["colo:pairs"][0]["llm"]["model"] = "Qwen/Qwen3-30B-A3B-FP8"


def stretch_gemma_context(config: dict[str, Any]) -> None:
    """gemma31b's 16K context to 64K: its KV cache no longer holds one request."""
    config["colo:pairs"][2]["llm"]["maxModelLen"] = 65536


def add_pair(config: dict[str, Any]) -> None:
    config["colo:pairs"].append(
        {
            "name": "qwen8b",
            "llm": {"model": "Qwen/Qwen3-8B", "maxModelLen": 16384, "vllm": {"version": "0.19.1"}},
            "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": {"version": "0.19.1"}},
        }
    )


def remove_moe_pair(config: dict[str, Any]) -> None:
    config["colo:pairs"] = [p for p in config["colo:pairs"] if p["name"] != "qwen35b-moe"]
