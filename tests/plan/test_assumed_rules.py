"""A vLLM release newer than every mirrored one: refused with the newest mirrored release and the override, and
planned with the assumed release's rules only when the stack asks, saying so in capitals."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from colo.cli import main
from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack
from colo.vllm import assumption_refusal, supported_range

NEWEST = supported_range()[1]
UNMIRRORED = "0.99.0"  # newer than any release colo will mirror for a while


def _raw(vllm: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["vllm"] = vllm
    return raw


def test_a_newer_release_is_refused_naming_the_newest_mirrored_one_and_the_override() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(_raw({"version": UNMIRRORED}))
    message = {p.path: p.message for p in caught.value.problems}["colo:pairs[0].llm.vllm.version"]
    assert f"newer than {NEWEST}" in message and f"pin {NEWEST}" in message
    assert f'vllm.assumeRulesOf: "{NEWEST}"' in message


def test_the_override_plans_the_newer_release_with_the_assumed_rules_and_says_so_first() -> None:
    plan = make_plan(parse_stack_config(_raw({"version": UNMIRRORED, "assumeRulesOf": NEWEST})))
    assert not [p for p in plan.problems if "vllm" in p.path], plan.problems
    llm = next(s for s in plan.pairs[0].servers if s.role == "llm")
    assert llm.image == f"vllm/vllm-openai:v{UNMIRRORED}"  # it runs what it pins
    assert llm.vllm_version == UNMIRRORED
    assert llm.memory_plan.budget.spec.rules.last == NEWEST  # sized by what it assumes
    first = plan.warnings[0]
    assert first.path == "colo:pairs[0].llm.vllm.assumeRulesOf"
    assert first.message.startswith("RULES OF ANOTHER RELEASE ASSUMED")
    assert f"vLLM {UNMIRRORED} is planned with the memory rules" in first.message
    assert f"of vLLM {NEWEST}" in first.message and "at your own risk" in first.message


@pytest.mark.parametrize(
    ("version", "assumed", "said"),
    [
        ("0.99.0", "0.7.0", "not a release whose memory rules colo mirrors"),
        (NEWEST, NEWEST, "colo mirrors vLLM"),  # a mirrored release keeps its own rules
        ("0.7.3", "0.8.0", "older than every release colo mirrors"),
    ],
)
def test_an_override_that_would_hide_rules_colo_has_is_refused(version: str, assumed: str, said: str) -> None:
    refused = assumption_refusal(version, assumed)
    assert refused is not None and said in refused
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(_raw({"version": version, "assumeRulesOf": assumed}))
    messages = {p.path: p.message for p in caught.value.problems}
    assert said in messages["colo:pairs[0].llm.vllm"]


def test_estimate_takes_the_override_as_a_flag_and_says_so_in_its_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", UNMIRRORED]
    assert main(argv) == 2
    assert f"--assume-rules-of {NEWEST}" in capsys.readouterr().err
    assert main([*argv, "--assume-rules-of", NEWEST]) in (0, 1)
    view = json.loads(capsys.readouterr().out)
    assert view["rules_assumed"].startswith("RULES OF ANOTHER RELEASE ASSUMED")
    assert next(iter(view)) == "rules_assumed" and view["rules"] == f"vLLM {NEWEST}-{NEWEST}"


def test_estimate_refuses_an_override_of_a_mirrored_release(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "L40S", "--vllm-version", NEWEST]
    assert main([*argv, "--assume-rules-of", NEWEST]) == 2
    err = capsys.readouterr().err
    assert "--assume-rules-of" in err and "drop assumeRulesOf" in err
