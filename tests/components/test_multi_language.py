"""ColocatedPair for other languages: the schema Pulumi's component host infers, and the same plan and refusals
as the Python component."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from pulumi.provider.experimental.analyzer import Analyzer

from colo.components import PairFigures, ProgramError
from colo.components.multi_language import PACKAGE, ColocatedPair, ColocatedPairInputs, python_args
from colo.components.pair_args import plan_colocated_pair
from colo.errors import ConfigError, InfeasiblePlanError
from tests.components.conftest import AwsMocks, run_under_mocks
from tests.components.test_colocated_pair import local_pair_args

# The local stack's pair (stacks/Pulumi.local.yaml), as a TypeScript or Go program would pass it.
LOCAL_PAIR: ColocatedPairInputs = {
    "llm": {"model": "Qwen/Qwen3-8B-FP8", "max_model_len": 32768, "vllm": {"version": "0.19.1"}},
    "embedding": {"model": "Qwen/Qwen3-Embedding-0.6B", "vllm": {"version": "0.19.1"}},
    "namespace": "team-ml",
    "model_claim": "models",
    "gpu": "L40S",
    "instance_type": "g6e.xlarge",
    "gpu_pairing": "time-slice",
    "kubernetes_version": "1.34",
    "node_selector": {"colo.dev/gpu-pool": "colo"},
}


@pytest.fixture(scope="module")
def analyzed() -> Any:
    return Analyzer(PACKAGE).analyze([ColocatedPair])


def test_the_schema_takes_the_servers_and_gpu_plain_and_the_names_of_other_resources_as_inputs(
    analyzed: Any,
) -> None:
    inputs = analyzed["component_definitions"]["ColocatedPair"].inputs
    assert {key for key, prop in inputs.items() if prop.plain} >= {"llm", "embedding", "gpu", "gpuPairing"}
    assert {key for key, prop in inputs.items() if not prop.plain} == {
        "namespace",
        "modelClaim",
        "nodeSelector",
    }
    assert {key for key, prop in inputs.items() if not prop.optional} == {
        "llm",
        "embedding",
        "namespace",
        "modelClaim",
    }
    server = analyzed["type_definitions"]["Server"].properties
    assert {"model", "vllm", "maxModelLen", "extraArgs"} <= set(server)


def test_the_schema_exposes_the_plan_as_outputs(analyzed: Any) -> None:
    outputs = analyzed["component_definitions"]["ColocatedPair"].outputs
    assert set(outputs) == {
        "deploymentName",
        "serviceNames",
        "podSelector",
        "ports",
        "utilizations",
        "kvTokens",
        "startupProbeSeconds",
        "predictedUsedMib",
        "predictedFreeMib",
    }


def test_inputs_of_another_language_plan_as_the_python_arguments_do() -> None:
    other = plan_colocated_pair("chat", python_args("chat", LOCAL_PAIR)).pairs[0]
    python = plan_colocated_pair("chat", local_pair_args()).pairs[0]
    assert PairFigures.of(other) == PairFigures.of(python)


def test_an_input_the_schema_refuses_is_named_as_the_input() -> None:
    inputs: ColocatedPairInputs = {**LOCAL_PAIR, "gpu_pairing": "nvlink"}
    with pytest.raises(ProgramError) as raised:
        python_args("chat", inputs)
    assert isinstance(raised.value.error, ConfigError)
    assert [p.path for p in raised.value.error.problems] == ["cluster.gpuPairing"]


def test_a_pair_that_does_not_fit_registers_nothing() -> None:
    inputs: ColocatedPairInputs = {**LOCAL_PAIR, "llm": {**LOCAL_PAIR["llm"], "max_model_len": 65536}}
    mocks = AwsMocks()
    with pytest.raises(ProgramError) as raised:
        run_under_mocks(lambda: {"urn": ColocatedPair("chat", inputs).urn}, mocks=mocks)
    assert isinstance(raised.value.error, InfeasiblePlanError)
    assert [p.path for p in raised.value.error.problems] == ["llm.maxModelLen"]
    assert mocks.resources == []


def test_the_component_wraps_colos_own_pair_and_passes_its_outputs_on() -> None:
    def build() -> dict[str, pulumi.Input[Any]]:
        pair = ColocatedPair("chat", LOCAL_PAIR)
        return {"services": pair.service_names, "kv": pair.kv_tokens, "used": pair.predicted_used_mib}

    mocks, outputs = run_under_mocks(build)
    assert [r.type for r in mocks.resources if not r.custom] == [
        "colo:index:ColocatedPair",
        "colo:index:ColocatedPair",
    ]
    assert outputs["services"] == {"embedding": "chat-embedding", "llm": "chat-llm"}
    figures = PairFigures.of(plan_colocated_pair("chat", local_pair_args()).pairs[0])
    assert outputs["kv"] == {s.role: s.kv_tokens for s in figures.servers}
    assert outputs["used"] == figures.predicted_used_mib
