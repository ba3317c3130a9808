"""A stack's `extraArgs` are read as its pinned vLLM release reads them: each refused entry is named by its index."""

from __future__ import annotations

import copy

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.stackfiles import load_stack


def _with_extra_args(args: list[str]) -> ConfigError:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["extraArgs"] = args
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    return caught.value


def test_the_stack_config_refuses_each_bad_entry_at_its_own_index() -> None:
    error = _with_extra_args(["--enable-prefix-caching", "--gpu_memory_utilization=0.99", "-tp", "2"])
    paths = {p.path: p.message for p in error.problems}
    assert set(paths) == {"colo:pairs[0].llm.extraArgs[1]", "colo:pairs[0].llm.extraArgs[2]"}
    assert "vLLM 0.19.1 reads '-tp'" in paths["colo:pairs[0].llm.extraArgs[2]"]
