"""Servers planned with the rules of another vLLM release (`vllm.assumeRulesOf`): the plan says so first."""

from __future__ import annotations

from colo.config.schema import StackConfig
from colo.errors import Problem
from colo.vllm import assumed_rules_warning


def assumed_rules_warnings(config: StackConfig) -> list[Problem]:
    """One warning per server whose figures come from a release other than the one it runs."""
    return [
        Problem(
            f"colo:pairs[{index}].{role}.vllm.assumeRulesOf",
            assumed_rules_warning(spec.vllm.version, spec.vllm.assume_rules_of),
        )
        for index, pair in enumerate(config.pairs)
        for role, spec in pair.servers()
        if spec.vllm.assume_rules_of is not None
    ]
