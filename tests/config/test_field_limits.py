"""Every field carries the limits of the service that receives it: a value Kubernetes, AWS, a registry or vLLM
would refuse later is refused by colo now, at its own key, without echoing a huge value back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from colo.config import parse_stack_config
from colo.errors import ConfigError
from colo.stackfiles import load_stack

DIGEST = "sha256:" + "ab" * 32


def _valid() -> dict[str, Any]:
    raw = copy.deepcopy(load_stack("local").values)
    raw["cluster"]["name"] = "colo-local"
    raw["storage"]["syncImage"] = "registry.example/colo-sync:0.1.0"
    return raw


def _set(raw: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = raw
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[last] = value


def _problems(path: str, value: Any) -> dict[str, str]:
    raw = _valid()
    _set(raw, path, value)
    try:
        parse_stack_config(raw)
    except ConfigError as exc:
        return {problem.path: problem.message for problem in exc.problems}
    return {}


LLM = "pairs.0.llm"

# (key, a value the receiving service refuses, the config path named, words of the reason)
REFUSED: list[tuple[str, Any, str, str]] = [
    ("pairs.0.name", "chat\n-llm", "colo:pairs[0].name", "not a DNS label"),
    ("pairs.0.name", "chat-", "colo:pairs[0].name", "not a DNS label"),
    (f"{LLM}.vllm", {"version": "0.19.1\n"}, "colo:pairs[0].llm.vllm.version", "not a vLLM release"),
    (f"{LLM}.vllm", {"version": "0.１９.1"}, "colo:pairs[0].llm.vllm.version", "not a vLLM release"),
    ("cluster.kubernetesVersion", "1.34\n", "colo:cluster.kubernetesVersion", "minor version"),
    ("cluster.kubernetesVersion", "1.３４", "colo:cluster.kubernetesVersion", "minor version"),
    ("cluster.name", "colo prod; rm -rf /", "colo:cluster.name", "not an EKS cluster name"),
    ("cluster.name", "c" * 64, "colo:cluster.name", "at most 63"),
    ("cluster.name", "-colo", "colo:cluster.name", "not an EKS cluster name"),
    ("cluster.namespace", "kube-system", "colo:cluster.namespace", "the cluster itself uses"),
    ("cluster.namespace", "default", "colo:cluster.namespace", "the cluster itself uses"),
    ("cluster.namespace", "colo\n", "colo:cluster.namespace", "not a DNS label"),
    ("storage.storageClass", "Not Valid!", "colo:storage.storageClass", "DNS subdomain"),
    ("storage.storageClass", "", "colo:storage.storageClass", "DNS subdomain"),
    ("storage.syncServiceAccount", "Model_Reader", "colo:storage.syncServiceAccount", "DNS subdomain"),
    ("storage.size", "0Gi", "colo:storage.size", "above zero"),
    ("storage.size", "500GB", "colo:storage.size", "storage quantity"),
    ("storage.size", "99999999999Gi", "colo:storage.size", "storage quantity"),
    ("storage.readThroughputMiBps", 1e-300, "colo:storage.readThroughputMiBps", "greater than or equal to 1"),
    ("storage.readThroughputMiBps", 1e9, "colo:storage.readThroughputMiBps", "less than or equal to"),
    ("storage.hubDownloadMiBps", 0.001, "colo:storage.hubDownloadMiBps", "greater than or equal to 1"),
    ("storage.syncImage", "registry.example/colo-sync:", "colo:storage.syncImage", "tag not empty"),
    ("nodePool.nodeSelector", {"bad key!": "x"}, "colo:nodePool.nodeSelector", "label key"),
    ("nodePool.nodeSelector", {"pool": "v" * 64}, "colo:nodePool.nodeSelector", "label value"),
    ("nodePool.nodeSelector", {"pool": "a b"}, "colo:nodePool.nodeSelector", "label value"),
    ("nodePool.subnetIds", ["subnet-xyz;rm"], "colo:nodePool.subnetIds[0]", "subnet ID"),
    (
        "nodePool.subnetIds",
        ["subnet-0123abcd", "subnet-0123abcd"],
        "colo:nodePool.subnetIds",
        "more than once",
    ),
    ("nodePool.instanceType", "g6e xlarge", "colo:nodePool.instanceType", "instance type"),
    ("nodePool.gpusPerNode", 8, "colo:nodePool.gpusPerNode", "g6e.xlarge has 1 GPU"),
    ("nodePool.maxNodes", 10**9, "colo:nodePool.maxNodes", "less than or equal to"),
    (f"{LLM}.memory", "0Mi", "colo:pairs[0].llm.memory", "above zero"),
    (f"{LLM}.cpu", "0m", "colo:pairs[0].llm.cpu", "above zero"),
    (f"{LLM}.cpu", "2\n", "colo:pairs[0].llm.cpu", "CPU quantity"),
    (f"{LLM}.model", "Qwen/Qwen3 8B", "colo:pairs[0].llm.model", "Hugging Face model id"),
    (f"{LLM}.model", "", "colo:pairs[0].llm.model", "Hugging Face model id"),
    (f"{LLM}.model", "a" * 97, "colo:pairs[0].llm.model", "at most 96"),
    (f"{LLM}.maxModelLen", 10**12, "colo:pairs[0].llm.maxModelLen", "less than or equal to"),
    (f"{LLM}.extraArgs", ["x" * 20_000], "colo:pairs[0].llm.extraArgs[0]", "at most 16384"),
    (f"{LLM}.extraArgs", ["--seed\x000"], "colo:pairs[0].llm.extraArgs[0]", "control characters"),
    (f"{LLM}.extraArgs", ["--seed=1"] * 300, "colo:pairs[0].llm.extraArgs", "at most 256"),
    (f"{LLM}.weightsUri", "https://example.com/models/qwen/", "colo:pairs[0].llm.weightsUri", "not an s3://"),
    (f"{LLM}.weightsUri", "s3://", "colo:pairs[0].llm.weightsUri", "names no bucket"),
    (f"{LLM}.weightsUri", "s3://Bad_Bucket/qwen/", "colo:pairs[0].llm.weightsUri", "bucket name"),
    (f"{LLM}.weightsUri", "s3://ab/qwen/", "colo:pairs[0].llm.weightsUri", "bucket name"),
    (f"{LLM}.weightsUri", "s3://192.168.1.10/qwen/", "colo:pairs[0].llm.weightsUri", "bucket name"),
    (f"{LLM}.weightsUri", "s3://AKIA123:secret@models/qwen/", "colo:pairs[0].llm.weightsUri", "credentials"),
    (f"{LLM}.weightsUri", "s3://models/../etc/", "colo:pairs[0].llm.weightsUri", "'..'"),
    (f"{LLM}.weightsUri", "s3://models/a//b/", "colo:pairs[0].llm.weightsUri", "empty"),
    (f"{LLM}.weightsUri", "s3://models/qwen 8b/", "colo:pairs[0].llm.weightsUri", "characters"),
    (f"{LLM}.profile", "s3://Bad_Bucket/qwen/", "colo:pairs[0].llm.profile", "bucket name"),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai:"},
        "colo:pairs[0].llm.vllm.image",
        "tag",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai@sha256:"},
        "colo:pairs[0].llm.vllm.image",
        "64",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai@sha256:abc123"},
        "colo:pairs[0].llm.vllm.image",
        "64 hexadecimal",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "user:pass@registry.example/vllm:v0.19.1"},
        "colo:pairs[0].llm.vllm.image",
        "credentials",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai:v０.１９.１"},
        "colo:pairs[0].llm.vllm.image",
        "not an image reference",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai:v0.11.0"},
        "colo:pairs[0].llm.vllm",
        "vllm.version is 0.19.1",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "docker.io/vllm/vllm-openai:v0.20.2@" + DIGEST},
        "colo:pairs[0].llm.vllm",
        "vllm.version is 0.19.1",
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "Registry.example/VLLM:v1"},
        "colo:pairs[0].llm.vllm.image",
        "lower case",
    ),
]


@pytest.mark.parametrize(
    ("key", "value", "path", "reason"), REFUSED, ids=[f"{k}={v!r:.40}" for k, v, _, _ in REFUSED]
)
def test_a_value_the_receiving_service_refuses_is_refused_at_its_key(
    key: str, value: Any, path: str, reason: str
) -> None:
    problems = _problems(key, value)
    assert path in problems, problems
    assert reason in problems[path]


ACCEPTED: list[tuple[str, Any]] = [
    ("pairs.0.name", "c" * 40),
    ("cluster.name", "colo_prod-2"),
    ("cluster.namespace", "llm-serving"),
    ("storage.storageClass", "efs-sc.example.com"),
    ("storage.syncServiceAccount", "model-reader"),
    ("nodePool.nodeSelector", {"node.kubernetes.io/instance-type": "g6e.xlarge", "colo.dev/pool": ""}),
    ("nodePool.subnetIds", ["subnet-0123abcd", "subnet-0f1e2d3c4b5a60001"]),
    ("nodePool.gpusPerNode", 1),
    (f"{LLM}.weightsUri", "s3://my.models-bucket/hf/Qwen--Qwen3-8B-FP8/"),
    (f"{LLM}.weightsUri", "s3://models"),
    (f"{LLM}.vllm", {"version": "0.19.1", "image": "vllm/vllm-openai:v0.19.1"}),
    (f"{LLM}.vllm", {"version": "0.19.1", "image": "vllm/vllm-openai:v0.19.1@" + DIGEST}),
    (
        f"{LLM}.vllm",
        {
            "version": "0.19.1",
            "image": "docker.io/vllm/vllm-openai:v0.19.1-cu130",
            "build": {"flashinfer": "0.6.6"},
        },
    ),
    (
        f"{LLM}.vllm",
        {"version": "0.19.1", "image": "vllm/vllm-openai@" + DIGEST, "build": {"flashinfer": False}},
    ),
    (
        f"{LLM}.vllm",
        {
            "version": "0.19.1",
            "image": "registry.example:5000/team/vllm-custom:2024.11@" + DIGEST,
            "build": {"flashinfer": "0.6.6", "torch": "2.10.0"},
        },
    ),
    (f"{LLM}.extraArgs", ["--chat-template", "{% for m in messages %}\n{{ m.content }}\n{% endfor %}"]),
    (f"{LLM}.cpu", "1500m"),
    (f"{LLM}.cpu", "0.5"),
    ("storage.readThroughputMiBps", 1),
]


@pytest.mark.parametrize(("key", "value"), ACCEPTED, ids=[f"{k}={v!r:.40}" for k, v in ACCEPTED])
def test_values_within_the_limits_are_accepted(key: str, value: Any) -> None:
    assert _problems(key, value) == {}


def test_a_huge_value_is_cut_where_a_message_echoes_it() -> None:
    problems = _problems("cluster.namespace", "x" * 10_000_000)
    (message,) = problems.values()
    assert len(message) < 400
    assert "x" * 80 + "…" in message


def test_a_huge_unknown_key_is_cut_in_its_path() -> None:
    raw = _valid()
    raw["pairs"][0]["llm"]["k" * 100_000] = 1
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw)
    (problem,) = caught.value.problems
    assert len(problem.path) < 200


def test_a_control_character_is_shown_escaped_where_a_message_echoes_the_value() -> None:
    (message,) = _problems("pairs.0.name", "chat\n-llm").values()
    assert "'chat\\n-llm'" in message
    (message,) = _problems(f"{LLM}.extraArgs", ["--seed\x001"]).values()
    assert "'--seed\\x001'" in message
