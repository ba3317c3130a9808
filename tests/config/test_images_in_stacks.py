"""The image decides the build: colo reads each known image's build facts from its catalog, refuses a moving tag,
and asks a stack naming an image it does not know for the facts the budget reads; it never assumes them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack

DIGEST = "sha256:" + "ab" * 32


def _stack(version: str = "0.19.1", **vllm: Any) -> dict[str, Any]:
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["vllm"] = {"version": version, **vllm}
    return raw


def _refusal(**vllm: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(_stack(**vllm))
    (problem,) = caught.value.problems
    assert problem.path == "colo:pairs[0].llm.vllm"
    return problem.message


def test_the_official_image_of_the_release_carries_its_catalogued_build() -> None:
    config = parse_stack_config(_stack())
    assert config.pairs[0].llm.vllm.flashinfer_installed  # the 0.19 images install FlashInfer 0.6.6


def test_a_moving_tag_is_refused_as_naming_no_release() -> None:
    assert "is a moving tag" in _refusal(image="vllm/vllm-openai:nightly")


def test_an_image_the_catalog_lacks_is_refused_naming_the_build_keys_the_budget_reads() -> None:
    message = _refusal(image="registry.example/team/vllm:2026.11")
    assert "cannot be assumed" in message and "vllm.build.flashinfer" in message


def test_a_digest_of_the_official_image_takes_the_stated_releases_build() -> None:
    """Pinning by digest is what supply-chain guidance asks for; a digest of the vLLM project's repository is
    one of its release builds, and vllm.version says which, so that release's catalogued facts apply."""
    by_digest = parse_stack_config(_stack(image=f"vllm/vllm-openai@{DIGEST}"))
    by_tag = parse_stack_config(_stack())
    assert by_digest.pairs[0].llm.vllm.flashinfer_installed == by_tag.pairs[0].llm.vllm.flashinfer_installed
    planned = make_plan(by_digest).pairs[0].llm
    assert planned.image == f"vllm/vllm-openai@{DIGEST}"
    assert planned.memory_plan.budget == make_plan(by_tag).pairs[0].llm.memory_plan.budget
    assert (
        parse_stack_config(_stack(image=f"vllm/vllm-openai:v0.19.1@{DIGEST}")).pairs[0].llm.vllm.build is None
    )


def test_a_digest_of_the_official_image_with_its_build_stated_keeps_the_stated_facts() -> None:
    """Before the catalog vouched for official digests, stating the build was the only way to pin one; such a
    stack still plans, with its own facts."""
    stack = _stack(image=f"vllm/vllm-openai@{DIGEST}", build={"flashinfer": False})
    assert parse_stack_config(stack).pairs[0].llm.vllm.flashinfer_installed is False


def test_a_digest_of_another_repository_names_no_release_and_no_build() -> None:
    assert "cannot be assumed" in _refusal(image=f"registry.example/team/vllm@{DIGEST}")


def test_a_digest_of_the_official_image_of_a_release_without_catalogued_facts_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(_stack("0.7.3", image=f"vllm/vllm-openai@{DIGEST}"))
    assert any("cannot be assumed" in p.message for p in caught.value.problems)


def test_build_facts_the_catalog_already_holds_are_refused() -> None:
    assert "drop vllm.build.flashinfer" in _refusal(build={"flashinfer": False})


def test_a_build_without_flashinfer_is_sized_with_the_samplers_native_path() -> None:
    """0.11.0's dummy sampler takes FlashInfer's path where it is installed (the official image) and PyTorch's sort
    where it is not (a build the stack says lacks it): the same server, two activation peaks."""
    with_it = make_plan(parse_stack_config(_stack("0.11.0"))).pairs[0].llm.memory_plan.budget
    image = "registry.example/team/vllm:0.11.0-pip"
    stack = _stack("0.11.0", image=image, build={"flashinfer": False})
    without = make_plan(parse_stack_config(stack)).pairs[0].llm
    assert not without.memory_plan.budget.spec.flashinfer_installed and with_it.spec.flashinfer_installed
    assert without.memory_plan.budget.activation_bytes > with_it.activation_bytes


def test_an_image_of_another_release_is_refused() -> None:
    assert "is vLLM 0.11.0, but vllm.version is 0.19.1" in _refusal(image="vllm/vllm-openai:v0.11.0")


def test_a_rocm_image_is_not_sized() -> None:
    assert "AMD ROCm builds" in _refusal(image="vllm/vllm-openai:v0.19.1-rocm")
