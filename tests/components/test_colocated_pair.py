"""ColocatedPair in a program of one's own: planned as `colo plan` plans the same keys, refused before it registers
anything, fed other resources' outputs, and exposing its plan as typed outputs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from colo.cli.common import load_config
from colo.components import (
    Cluster,
    ColocatedPair,
    ColocatedPairArgs,
    IngressSource,
    Network,
    NodePool,
    PairFigures,
    ProgramError,
    ServerSpec,
    Storage,
    VllmImage,
)
from colo.components.kubernetes import PairReferences, stack_pair_args
from colo.components.pair_args import plan_colocated_pair
from colo.errors import ConfigError, InfeasiblePlanError
from colo.plan.pair import PairPlan
from colo.plan.report import pair_view
from colo.plan.stack import make_plan
from colo.stackfiles import StackFile, list_stacks, load_stack
from tests.components.conftest import AwsMocks, run_under_mocks
from tests.components.stacks import DEPLOYMENT, pod_spec, variant

SERVICE = "kubernetes:core/v1:Service"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"

# The local stack's pair (stacks/Pulumi.local.yaml), written as a program writes it.
LLM = ServerSpec(model="Qwen/Qwen3-8B-FP8", max_model_len=32768, vllm=VllmImage(version="0.19.1"))
EMBEDDING = ServerSpec(model="Qwen/Qwen3-Embedding-0.6B", vllm=VllmImage(version="0.19.1"))
CLUSTER = Cluster(kubernetes_version="1.34", node_image="al2023-nvidia", gpu_pairing="time-slice")
NODES = NodePool(gpu="L40S", instance_type="g6e.xlarge", node_selector={"colo.dev/gpu-pool": "colo"})
STORAGE = Storage(storage_class="standard", size="100Gi", read_throughput_mib_per_s=250)


def local_pair_args(**changes: Any) -> ColocatedPairArgs:
    args = ColocatedPairArgs(
        llm=LLM,
        embedding=EMBEDDING,
        namespace="team-ml",
        model_claim="models",
        cluster=CLUSTER,
        node_pool=NODES,
        storage=STORAGE,
    )
    return replace(args, **changes)


def declare(args: ColocatedPairArgs, name: str = "chat", **kwargs: Any) -> tuple[AwsMocks, dict[str, Any]]:
    def build() -> dict[str, pulumi.Input[Any]]:
        pair = ColocatedPair(name, args)
        return {
            "deployment": pair.deployment_name,
            "services": pulumi.Output.all(**pair.service_names),
            "utilizations": pair.utilizations,
            "kv_tokens": pair.kv_tokens,
            "startup_probe_seconds": pair.startup_probe_seconds,
            "predicted_used_mib": pair.predicted_used_mib,
            "predicted_free_mib": pair.predicted_free_mib,
        }

    return run_under_mocks(build, **kwargs)


def refusal(args: ColocatedPairArgs, name: str = "chat") -> tuple[ProgramError, AwsMocks]:
    mocks = AwsMocks()
    with pytest.raises(ProgramError) as raised:
        run_under_mocks(lambda: {"urn": ColocatedPair(name, args).urn}, mocks=mocks)
    return raised.value, mocks


def test_a_pair_of_ones_own_is_planned_as_colo_plan_plans_the_same_keys_in_a_stack() -> None:
    stack_plan = make_plan(load_config(load_stack("local")))
    alone = plan_colocated_pair("chat", local_pair_args())
    assert pair_view(alone.pairs[0]) == pair_view(stack_plan.pairs[0])


def _stack_files() -> list[StackFile]:
    """The checked-in stacks and the variants whose pairs differ most (secrets, S3 weights, no sidecars)."""
    return [
        *(load_stack(name) for name in list_stacks()),
        variant(
            "prod",
            storage={"syncImage": "registry.example.com/colo-sync:1.0", "syncServiceAccount": "sync"},
            pairs={"all": {"weightsUri": "s3://bucket/model/"}},
        ),
        variant("local", cluster={"kubernetesVersion": "1.28"}, secret_token=True),
    ]


@pytest.mark.parametrize("stack_file", _stack_files(), ids=lambda f: f.stack + "-" + str(len(f.values)))
def test_each_pair_of_a_stack_plans_alone_exactly_as_the_stack_plans_it(stack_file: StackFile) -> None:
    """colo's own program declares every pair through ColocatedPair: its plan must be the stack plan's."""
    config = load_config(stack_file)
    stack_plan = make_plan(config)
    references = PairReferences(namespace=config.cluster.namespace, model_claim="models", secrets=[])
    for pair, planned in zip(config.pairs, stack_plan.pairs, strict=True):
        alone = plan_colocated_pair(pair.name, stack_pair_args(config, pair, references)).pairs[0]
        assert _as_declared(alone) == _as_declared(planned), pair.name


def _as_declared(pair: PairPlan) -> dict[str, Any]:
    """Everything of a pair's plan that reaches its objects or `colo plan`'s view: all but where the stack put
    it (its node and GPUs, and the pairs[i] its messages would name)."""
    view = {key: value for key, value in pair_view(pair).items() if key not in {"node", "gpu", "gpus"}}
    return {
        **view,
        "weight_syncs": pair.weight_syncs,
        "service_account": pair.service_account,
        "env": [server.env for server in pair.servers],
        "rollout_seconds": pair.rollout_seconds,
    }


def test_a_pair_that_would_not_start_is_refused_with_colo_plans_message_before_anything_is_registered() -> (
    None
):
    too_long = LLM.model_copy(update={"max_model_len": 65536})
    error, mocks = refusal(local_pair_args(llm=too_long))
    assert isinstance(error.error, InfeasiblePlanError)
    (problem,) = error.error.problems
    assert problem.path == "llm.maxModelLen"
    stack = variant("local", pairs={"all": {"maxModelLen": 65536}})
    # The variant sets every server's maxModelLen; the LLM's problem is the one this pair has.
    stack_problems = {p.path: p.message for p in make_plan(load_config(stack)).problems}
    assert problem.message == stack_problems["colo:pairs[0].llm.maxModelLen"]
    assert str(error).startswith("ColocatedPair chat: the plan is refused; nothing was deployed:\n")
    assert mocks.resources == []  # not even the component itself


@pytest.mark.parametrize(
    ("changes", "path", "fix"),
    [
        pytest.param(
            {"cluster": Cluster(node_image="bottlerocket-nvidia")}, "cluster.gpuPairing", "dra", id="uuid"
        ),
        pytest.param(
            {"node_pool": NodePool(gpu="L40S", instance_type="g6e.12xlarge")},
            "nodePool.instanceType",
            "single-GPU instance type",
            id="time-slice-on-4-gpus",
        ),
        pytest.param(
            {"llm": LLM.model_copy(update={"vllm": VllmImage(version="0.1.0")})},
            "llm.vllm.version",
            "0.8.0",
            id="unmirrored-release",
        ),
    ],
)
def test_a_refusal_names_the_argument_it_is_about(changes: dict[str, Any], path: str, fix: str) -> None:
    error, mocks = refusal(local_pair_args(**changes))
    messages = {p.path: p.message for p in error.error.problems}
    assert fix in messages[path]
    assert mocks.resources == []


def test_a_name_kubernetes_cannot_carry_is_an_invalid_argument() -> None:
    error, mocks = refusal(local_pair_args(), name="Chat_1")
    assert isinstance(error.error, ConfigError)
    assert [p.path for p in error.error.problems] == ["name"]
    assert mocks.resources == []


def test_the_pair_takes_other_resources_outputs_for_namespace_volume_and_node_selector() -> None:
    def build() -> dict[str, pulumi.Input[Any]]:
        namespace = k8s.core.v1.Namespace("team", metadata={"name": "team-ml"})
        claim = k8s.core.v1.PersistentVolumeClaim(
            "weights", metadata={"name": "weights", "namespace": namespace.metadata.name}
        )
        pair = ColocatedPair(
            "chat",
            local_pair_args(
                namespace=namespace.metadata.name,
                model_claim=claim.metadata.name,
                node_selector=pulumi.Output.from_input({"pool": "l40s"}),
            ),
        )
        return {"deployment": pair.deployment_name}

    mocks, outputs = run_under_mocks(build)
    (deployment,) = mocks.of_type(DEPLOYMENT)
    assert outputs["deployment"] == "chat"
    assert deployment.inputs["metadata"]["namespace"] == "team-ml"
    spec = pod_spec(deployment.inputs)
    assert spec["nodeSelector"] == {"pool": "l40s"}
    models = next(v for v in spec["volumes"] if v["name"] == "models")
    assert models["persistentVolumeClaim"]["claimName"] == "weights"
    assert {s.inputs["metadata"]["namespace"] for s in mocks.of_type(SERVICE)} == {"team-ml"}


def _policy_sources(mocks: AwsMocks) -> list[dict[str, Any]]:
    (policy,) = mocks.of_type(POLICY)
    (rule,) = policy.inputs["spec"]["ingress"]
    sources: list[dict[str, Any]] = rule["from"]
    return sources


def test_a_source_that_names_no_namespace_is_the_namespace_the_pair_runs_in() -> None:
    network = Network(
        allow_from=[
            IngressSource(pod_labels={"app": "gateway"}),
            IngressSource(namespace="team-ml", pod_labels={"app": "batch"}),
            IngressSource(namespace="web"),
        ]
    )
    mocks, _ = declare(local_pair_args(namespace=pulumi.Output.from_input("team-ml"), network=network))
    assert _policy_sources(mocks) == [
        {"podSelector": {"matchLabels": {"app": "gateway"}}},
        {"podSelector": {"matchLabels": {"app": "batch"}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "web"}}},
    ]


def test_without_allow_from_every_pod_of_the_pairs_namespace_may_call_it() -> None:
    mocks, _ = declare(local_pair_args())
    assert _policy_sources(mocks) == [{"podSelector": {}}]


def test_the_plan_comes_out_as_typed_outputs() -> None:
    figures = PairFigures.of(plan_colocated_pair("chat", local_pair_args()).pairs[0])
    by_role = figures.by_role()
    _, outputs = declare(local_pair_args())
    assert outputs["utilizations"] == {role: s.gpu_memory_utilization for role, s in by_role.items()}
    assert outputs["kv_tokens"] == {role: s.kv_tokens for role, s in by_role.items()}
    assert outputs["startup_probe_seconds"] == {role: s.startup_probe_seconds for role, s in by_role.items()}
    assert outputs["predicted_used_mib"] == figures.predicted_used_mib
    assert outputs["predicted_free_mib"] == figures.predicted_free_mib
    assert outputs["services"] == {"embedding": "chat-embedding", "llm": "chat-llm"}
    # What a user reads them for: the LLM's KV cache and the GPU's use, with the safety margin kept free.
    assert by_role["llm"].kv_tokens > by_role["llm"].max_model_len
    assert figures.predicted_free_mib >= figures.safety_margin_mib
    assert 0 < by_role["embedding"].gpu_memory_utilization < by_role["llm"].gpu_memory_utilization < 1


def test_the_figures_are_what_colo_plan_prints_for_the_pair() -> None:
    """The typed figures are read from the plan objects and `colo plan`'s JSON from the same objects through
    its own view: two readings that must agree, field by field."""
    plan = plan_colocated_pair("chat", local_pair_args())
    view = pair_view(plan.pairs[0])
    figures = PairFigures.of(plan.pairs[0])
    assert (figures.predicted_used_mib, figures.predicted_free_mib, figures.safety_margin_mib) == (
        view["predicted_used_mib"],
        view["predicted_free_mib"],
        view["safety_margin_mib"],
    )
    memory_keys = (
        "gpu_memory_utilization",
        "utilization_derived",
        "weights_gib",
        "kv_cache_gib",
        "kv_tokens",
    )
    memory_keys += ("max_concurrency", "max_model_len", "footprint_mib")
    for server, shown in zip(figures.servers, view["servers"], strict=True):
        assert (server.role, server.name, server.model, server.image, server.port) == (
            shown["role"],
            shown["name"],
            shown["model"],
            shown["image"],
            shown["port"],
        )
        assert server.vllm_args == tuple(shown["vllm_args"])
        assert server.startup_probe_seconds == shown["startup_probe_seconds"]
        assert {key: getattr(server, key) for key in memory_keys} == {
            key: shown["memory"][key] for key in memory_keys
        }


def _children_of_the_pair(mocks: AwsMocks) -> list[str]:
    """The objects declared under the pair, directly or through a component of its own."""
    return [
        r.type
        for r in mocks.resources
        if r.custom and "colo:index:ColocatedPair" in mocks.options_of(r).parent.rsplit("::", 2)[-2]
    ]


def test_every_object_the_pair_declares_is_its_child() -> None:
    mocks, _ = declare(local_pair_args())
    assert sorted(_children_of_the_pair(mocks)) == sorted([DEPLOYMENT, SERVICE, SERVICE, POLICY])
    assert [r.type for r in mocks.resources if not r.custom] == ["colo:index:ColocatedPair"]


def test_a_pair_alone_declares_the_scripts_its_pod_runs() -> None:
    mocks, _ = declare(
        local_pair_args(cluster=Cluster(gpu_pairing="uuid-handoff"), node_pool=NodePool(gpu="L40S"))
    )
    (config_map,) = mocks.of_type(CONFIG_MAP)
    assert config_map.inputs["metadata"]["name"] == "chat-scripts"
    (deployment,) = mocks.of_type(DEPLOYMENT)
    scripts = next(v for v in pod_spec(deployment.inputs)["volumes"] if v["name"] == "scripts")
    assert scripts["configMap"]["name"] == "chat-scripts"
    assert CONFIG_MAP in _children_of_the_pair(mocks)


def test_a_dra_pair_alone_declares_its_claim_template_and_its_pod_claims_it() -> None:
    mocks, _ = declare(local_pair_args(cluster=Cluster(gpu_pairing="dra"), node_pool=NodePool(gpu="L40S")))
    (template,) = mocks.of_type(CLAIM_TEMPLATE)
    assert template.inputs["metadata"]["name"] == "chat-gpu"
    (deployment,) = mocks.of_type(DEPLOYMENT)
    assert pod_spec(deployment.inputs)["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "chat-gpu"}
    ]


def test_a_pair_given_shared_scripts_declares_none_of_its_own() -> None:
    args = local_pair_args(cluster=Cluster(gpu_pairing="uuid-handoff"), scripts_config_map="colo-scripts")
    mocks, _ = declare(replace(args, node_pool=NodePool(gpu="L40S")))
    assert mocks.of_type(CONFIG_MAP) == []
