"""ColocatedPair for Pulumi programs in other languages: a component provider (package `colo`) hosting it.

Pulumi's Python component host (pulumi.provider.experimental) infers the package schema from the annotations
below, so they stay plain, evaluated types: no `from __future__ import annotations` in this module. What the
plan reads is plain in the schema (known as the program runs); what names another resource is an Input. The
arguments are the stack file's keys for one pair (a server's are generated from the stack schema, in
colo.components.multi_language_types), checked and planned by colo's own ColocatedPair.
`pulumi-resource-colo` (this module's `main`) is the provider plugin the engine starts.
"""

import sys
from importlib.metadata import version
from typing import Any, NotRequired, TypedDict

import pulumi
from pulumi.provider.experimental import component_provider_host

from colo.components.contract import PACKAGE, token
from colo.components.errors import refused
from colo.components.multi_language_types import Server
from colo.components.pair import ColocatedPair as PythonPair
from colo.components.pair_args import COMPONENT, ColocatedPairArgs, argument_path, plan_colocated_pair
from colo.config import parse_stack_config
from colo.errors import ConfigError


class ColocatedPairInputs(TypedDict):
    """A co-located pair: its servers, its GPU and platform (plain), and the resources it names (Inputs)."""

    llm: Server
    embedding: Server
    reranker: NotRequired[Server]
    namespace: pulumi.Input[str]
    model_claim: pulumi.Input[str]
    gpu: NotRequired[str]
    gpu_memory_mib: NotRequired[int]
    gpu_compute_capability: NotRequired[str]
    instance_type: NotRequired[str]
    gpu_pairing: NotRequired[str]
    kubernetes_version: NotRequired[str]
    node_image: NotRequired[str]
    instance: NotRequired[str]
    node_selector: NotRequired[pulumi.Input[dict[str, str]]]
    safety_margin_mib: NotRequired[int]


# Each input's home in a stack file: (top-level key, its key there).
_PLATFORM = {
    "gpu": ("nodePool", "gpu"),
    "gpu_memory_mib": ("nodePool", "gpuMemoryMiB"),
    "gpu_compute_capability": ("nodePool", "gpuComputeCapability"),
    "instance_type": ("nodePool", "instanceType"),
    "gpu_pairing": ("cluster", "gpuPairing"),
    "kubernetes_version": ("cluster", "kubernetesVersion"),
    "node_image": ("cluster", "nodeImage"),
    "instance": ("cluster", "name"),
    "safety_margin_mib": ("budget", "safetyMarginMiB"),
}
_ROLES = ("llm", "embedding", "reranker")


def _stack_file(name: str, args: ColocatedPairInputs) -> dict[str, Any]:
    raw: dict[str, Any] = {"cluster": {}, "nodePool": {}, "budget": {}}
    for key, (section, stack_key) in _PLATFORM.items():
        if key in args:
            raw[section][stack_key] = args[key]  # type: ignore[literal-required]
    pair = {role: dict(args[role]) for role in _ROLES if role in args}  # type: ignore[literal-required]
    raw["pairs"] = [{"name": name, **pair}]
    return raw


def python_args(name: str, args: ColocatedPairInputs) -> ColocatedPairArgs:
    """The inputs as colo's own arguments, validated as the one-pair stack file they describe."""
    try:
        config = parse_stack_config(_stack_file(name, args))
    except ConfigError as error:
        raise refused(f"{COMPONENT} {name}", error, argument_path) from None
    pair = config.pairs[0]
    return ColocatedPairArgs(
        llm=pair.llm,
        embedding=pair.embedding,
        reranker=pair.reranker,
        namespace=args["namespace"],
        model_claim=args["model_claim"],
        cluster=config.cluster,
        node_pool=config.node_pool,
        budget=config.budget,
        node_selector=args.get("node_selector"),
    )


class ColocatedPair(pulumi.ComponentResource):
    """An LLM and an embedding model (and optionally a reranker), served by vLLM on one GPU, sized by colo."""

    deployment_name: pulumi.Output[str]
    service_names: pulumi.Output[dict[str, str]]
    pod_selector: pulumi.Output[dict[str, str]]
    ports: pulumi.Output[dict[str, int]]
    utilizations: pulumi.Output[dict[str, float]]
    kv_tokens: pulumi.Output[dict[str, int]]
    startup_probe_seconds: pulumi.Output[dict[str, int]]
    predicted_used_mib: pulumi.Output[int]
    predicted_free_mib: pulumi.Output[int]

    def __init__(
        self, name: str, args: ColocatedPairInputs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        pair_args = python_args(name, args)
        plan = plan_colocated_pair(
            name, pair_args
        )  # a refusal stops the construct before anything is registered
        super().__init__(token("ColocatedPair"), name, {}, opts)
        pair = PythonPair(name, pair_args, pulumi.ResourceOptions(parent=self), plan=plan)
        self.deployment_name = pair.deployment_name
        self.service_names = pulumi.Output.all(**pair.service_names)
        self.pod_selector = pulumi.Output.from_input(pair.selector)
        self.ports = pulumi.Output.from_input({server.role: server.port for server in pair.figures.servers})
        self.utilizations = pair.utilizations
        self.kv_tokens = pair.kv_tokens
        self.startup_probe_seconds = pair.startup_probe_seconds
        self.predicted_used_mib = pair.predicted_used_mib
        self.predicted_free_mib = pair.predicted_free_mib
        self.register_outputs(
            {
                "deploymentName": self.deployment_name,
                "serviceNames": self.service_names,
                "podSelector": self.pod_selector,
                "ports": self.ports,
                "utilizations": self.utilizations,
                "kvTokens": self.kv_tokens,
                "startupProbeSeconds": self.startup_probe_seconds,
                "predictedUsedMib": self.predicted_used_mib,
                "predictedFreeMib": self.predicted_free_mib,
            }
        )


def main() -> None:
    """`pulumi-resource-colo ENGINE_ADDRESS`: the provider plugin, started by the Pulumi engine."""
    sys.argv[0] = "pulumi-resource-colo"
    # The installed distribution's version (colo's own __version__ lives in the package facade above this one).
    component_provider_host([ColocatedPair], name=PACKAGE, version=version("colo"))


if __name__ == "__main__":
    main()
