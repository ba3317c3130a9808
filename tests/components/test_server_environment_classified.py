"""The environment colo gives every server: each VLLM_ variable it sets is classified in
colo/vllm/memory_inputs.yaml, whether the containers or the plan set it."""

from __future__ import annotations

import copy

from colo.components.containers import SecretRef, server_env
from colo.config import parse_stack_config
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack
from colo.vllm.memory_inputs import environment_classes


def test_colo_sets_no_vllm_environment_variable_it_has_not_classified() -> None:
    env = environment_classes()
    classified = set(env.derived) | set(env.harmless)
    assert {"VLLM_USE_FLASHINFER_SAMPLER", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_API_KEY"} <= set(
        env.derived
    )
    set_by_containers = {
        v.name
        for v in server_env([SecretRef("VLLM_API_KEY", "secret", "key")], compile_cache=".vllm-cache/x")
    }
    assert "VLLM_CACHE_ROOT" in set_by_containers
    assert {name for name in set_by_containers if name.startswith("VLLM_")} <= classified
    raw = copy.deepcopy(load_stack("local").values)
    llm = raw["pairs"][0]["llm"]
    llm.update(
        maxModelLen=50000, allowLongMaxModelLen=True, vllm={"version": "0.22.0", "flashinferSampler": False}
    )
    raw["pairs"][0]["embedding"]["vllm"] = {"version": "0.22.0"}
    plan = make_plan(parse_stack_config(raw))
    set_by_plan = {name for pair in plan.pairs for server in pair.servers for name, _ in server.env}
    assert set_by_plan == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_USE_FLASHINFER_SAMPLER"}
    assert set_by_plan <= classified
    everything = classified | set(env.modelled) | set(env.outside_the_plan)
    assert len(everything) == len(env.derived) + len(env.harmless) + len(env.modelled) + len(
        env.outside_the_plan
    )
