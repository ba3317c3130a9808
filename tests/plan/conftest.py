"""Shared builders for planning tests: the field report's deployment, with its own hand-tuned settings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import StackConfig, parse_stack_config
from colo.stackfiles import load_stack

FIELD_REPORT_VLLM = (
    "0.20.0"  # see README "Which vLLM the field report ran": default util 0.92, old token formula
)


def field_report_raw(
    *, embedding_util: float | None = 0.08, llm_util: float | None = 0.87, moe_eager: bool = True
) -> dict[str, Any]:
    """The prod stack (the report's three L40S pairs) with the report's own utilizations."""
    raw = copy.deepcopy(load_stack("prod").values)
    for pair in raw["pairs"]:
        for role in ("embedding", "llm"):
            pair[role]["vllm"] = {"version": FIELD_REPORT_VLLM}
        if embedding_util is not None:
            pair["embedding"]["gpuMemoryUtilization"] = embedding_util
        if llm_util is not None:
            pair["llm"]["gpuMemoryUtilization"] = llm_util
        if moe_eager and "moe" in pair["name"]:
            pair["llm"]["enforceEager"] = True
    return raw


@pytest.fixture
def field_report() -> StackConfig:
    return parse_stack_config(field_report_raw())
