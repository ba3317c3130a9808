"""What a co-located pair is given, and the one-pair stack that describes: checked and planned as `colo plan` does.

The arguments are the stack schema's own pieces (colo.config.schema), so a pair's settings read the same in a
stack file and in a program. Planning runs before the component registers anything: a pair that would not
start is refused with `colo plan`'s messages, each at the argument it is about (`llm.maxModelLen`,
`cluster.gpuPairing`: the stack key without `colo:pairs[0].` or `colo:`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi

from colo.components.containers import SecretRef
from colo.components.errors import refused
from colo.config import assemble_stack_config
from colo.config.cluster_target import ClusterTarget
from colo.config.schema import Budget, Cluster, Network, NodePool, ServerSpec, StackConfig, Storage
from colo.errors import ColoError, InfeasiblePlanError
from colo.plan.pair import PairPlan
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.vllm import RankBalance

COMPONENT = "ColocatedPair"
_STACK_PREFIXES = ("colo:pairs[0].", "colo:")


@dataclass(frozen=True)
class ColocatedPairArgs:
    """A co-located pair: an LLM, an embedding model and optionally a reranker, all on one GPU; or an LLM with
    `tensorParallelSize` N on N GPUs of one node, each companion on one of them (`groupGpu`).

    Everything the plan reads is a plain value (the servers, the GPU, the platform, the budget), known when
    the program runs; what names another resource (namespace, model volume, node selector, scripts, claim
    template, secrets) is a `pulumi.Input`, so another resource's output can be passed.
    """

    llm: ServerSpec  # model, revision, maxModelLen, vllm (release and image), ...: a stack file's server keys
    embedding: ServerSpec
    namespace: pulumi.Input[str]  # where the pod, its Services and its NetworkPolicy go
    model_claim: pulumi.Input[str]  # the model volume's PersistentVolumeClaim (ModelStore.claim_name)
    reranker: ServerSpec | None = None
    # With a tensor-parallel LLM: equalize or refuse the free memory its companions leave the GPUs unequal
    rank_balance: RankBalance | None = None
    # gpuPairing (how the servers reach one GPU), kubernetesVersion, nodeImage, nativeSidecars; its `name` is
    # the app.kubernetes.io/instance label. Its `namespace` is not read: the pair runs in `namespace`.
    cluster: Cluster = field(default_factory=Cluster)
    # The GPU (gpu, gpuMemoryMiB) and its nodes (instanceType, gpusPerNode, nodeSelector, mode).
    node_pool: NodePool = field(default_factory=NodePool)
    storage: Storage = field(default_factory=Storage)  # throughputs for the probe budgets; S3 weight sync
    budget: Budget = field(default_factory=Budget)  # safety margin, embedding limits, calibration
    network: Network = field(default_factory=Network)  # who may call the servers (one NetworkPolicy)
    # What the pod selects, e.g. GpuNodePool.node_labels; default: node_pool's, as the plan says.
    node_selector: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None
    secrets: Sequence[SecretRef] = ()  # environment every server reads from a Secret (HF_TOKEN, VLLM_API_KEY)
    pod_annotations: Mapping[str, str] | None = None
    # colo's pod scripts (uuid-handoff, the start gate without native sidecars) and the DRA claim template;
    # where the pair needs one and none is given, it declares its own.
    scripts_config_map: pulumi.Input[str] | None = None
    claim_template: pulumi.Input[str] | None = None
    # The cluster the after-rollout check reads the servers' logs from: the one this pair's provider deploys
    # to. None: the kubernetes: settings of the stack config (the default provider's), as the provider reads.
    verify_cluster: ClusterTarget | None = None
    hub_token: str | None = None  # for gated Hub models at plan time; default HF_TOKEN
    aws_region: str | None = None  # passed to the S3 weight sync
    project_dir: Path | None = None  # where relative `profile` paths are read; default the working directory


def one_pair_stack(name: str, args: ColocatedPairArgs) -> StackConfig:
    """The stack config of this pair alone, checked as `colo plan` checks a stack file with these keys."""
    servers = {"llm": args.llm, "embedding": args.embedding, "reranker": args.reranker}
    pair: dict[str, object] = {
        "name": name,
        **{role: spec for role, spec in servers.items() if spec is not None},
    }
    if args.rank_balance is not None:
        pair["rankBalance"] = args.rank_balance
    return assemble_stack_config(
        cluster=args.cluster,
        node_pool=args.node_pool,
        storage=args.storage,
        budget=args.budget,
        network=args.network,
        pairs=[pair],
        hub_token=args.hub_token,
        aws_region=args.aws_region,
        project_dir=args.project_dir,
    )


def argument_path(path: str) -> str:
    """A one-pair stack's config path as the argument it names: colo:pairs[0].llm.maxModelLen -> llm.maxModelLen."""
    for prefix in _STACK_PREFIXES:
        if path.startswith(prefix):
            return path.removeprefix(prefix)
    return path


def plan_colocated_pair(name: str, args: ColocatedPairArgs) -> Plan:
    """The pair's plan; raises the refusal (a ProgramError) when the arguments are invalid or it does not fit."""
    label = f"{COMPONENT} {name}"
    try:
        config = one_pair_stack(name, args)
        plan = make_plan(config, s3_profile=s3_profile_reader(config), device_plugin_checks=False)
    except ColoError as error:
        raise refused(label, error, argument_path) from None
    if not plan.feasible:
        raise refused(label, InfeasiblePlanError(list(plan.problems)), argument_path)
    return plan


def planned_pair(plan: Plan, name: str, args: ColocatedPairArgs) -> PairPlan:
    """Pair `name` of a stack plan made elsewhere (colo's own program plans the stack once), checked to be the
    pair `args` describe: a plan of other servers would declare what the arguments do not say."""
    pairs = {pair.name: pair for pair in plan.pairs}
    configs = {pair.name: pair for pair in plan.config.pairs}
    if name not in pairs:
        raise ValueError(f"{COMPONENT} {name}: the plan given has no pair {name}")
    config = configs[name]
    if (config.llm, config.embedding, config.reranker) != (args.llm, args.embedding, args.reranker):
        raise ValueError(f"{COMPONENT} {name}: the plan given planned other servers than the arguments name")
    if args.rank_balance is not None and args.rank_balance != config.rank_balance:
        raise ValueError(
            f"{COMPONENT} {name}: the plan given balanced its ranks otherwise than rank_balance says"
        )
    return pairs[name]
