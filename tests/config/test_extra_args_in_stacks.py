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
    error = _with_extra_args(["--enable-auto-tool-choice", "--gpu_memory_utilization=0.99", "-tp", "2"])
    paths = {p.path: p.message for p in error.problems}
    assert set(paths) == {"colo:pairs[0].llm.extraArgs[1]", "colo:pairs[0].llm.extraArgs[2]"}
    assert "vLLM 0.19.1 reads '-tp'" in paths["colo:pairs[0].llm.extraArgs[2]"]


@pytest.mark.parametrize(
    ("args", "index", "says"),
    [
        (["stray"], 0, "vllm: error: unrecognized arguments: stray"),
        ([123], 0, "vllm: error: unrecognized arguments: 123"),
        (["--no-such-flag", "1"], 0, "vllm: error: unrecognized arguments: --no-such-flag 1"),
        (["--enable-auto-tool-choice", "--seed"], 1, "argument --seed: expected one argument"),
    ],
)
def test_extra_args_the_pinned_vllm_would_not_parse_are_refused_in_its_words(
    args: list[object], index: int, says: str
) -> None:
    error = _with_extra_args(args)  # type: ignore[arg-type]
    (problem,) = error.problems
    assert problem.path == f"colo:pairs[0].llm.extraArgs[{index}]"
    assert problem.message.startswith("vLLM 0.19.1 would not start: ") and says in problem.message


def test_a_flag_of_a_newer_release_says_which_release_has_it() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    llm = raw["pairs"][0]["llm"]
    llm["vllm"] = {"version": "0.8.5"}
    llm["extraArgs"] = ["--async-scheduling"]
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    messages = " ".join(p.message for p in caught.value.problems)
    assert "unrecognized arguments: --async-scheduling" in messages
    assert "--async-scheduling arrives in vLLM 0.10.0" in messages


def test_extra_args_the_release_parses_pass() -> None:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["extraArgs"] = ["--enable-auto-tool-choice", "--seed", "8", "--max-logprobs=5"]
    assert parse_stack_config(raw).pairs[0].llm.extra_args[1:3] == ["--seed", "8"]


@pytest.mark.parametrize(
    "args",
    [
        ["--enable-lora", "--max-loras", "4"],
        ["--cpu-offload-gb", "4"],
        ["--enable-sleep-mode"],
        ["--cudagraph-capture-sizes", "1", "2"],
    ],
)
def test_extra_args_that_change_memory_colo_does_not_size_are_refused_not_passed(args: list[str]) -> None:
    """A newcomer's report: these planned with the same figures and no warning."""
    error = _with_extra_args(args)
    first = error.problems[0]
    assert first.path == "colo:pairs[0].llm.extraArgs[0]"
    assert "colo refuses" in first.message or "use `" in first.message
