"""The whole stack's plan: every pair sized on its GPU, placed on a node, with flags and probe budgets.

Pure: no Pulumi, no cloud calls. Architectures come from colo's catalog or from files; an s3:// profile is
read through the `s3_profile` callable the caller passes in (the CLI and the program pass boto3's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from colo.catalog import GpuSpec, gpu, instance_type
from colo.catalog.architecture import ArchitectureError, ModelArchitecture
from colo.catalog.models import architecture_from_path, catalog_architecture
from colo.catalog.vllm_rules import VllmRules, first_release_where, rules_for
from colo.config.schema import Pair, ServerSpec, StackConfig
from colo.errors import Problem
from colo.plan.budget import ProcessSpec
from colo.plan.colocate import GpuPlan, ServerPlan, ServerRequest, plan_gpu
from colo.plan.engine_limits import resolve_limits
from colo.plan.hub_access import hub_access_warnings
from colo.plan.model_volume import weights_dir
from colo.plan.placement import Placement, node_count, node_limit_problems, place_pairs
from colo.plan.platform import gpus_per_node, instance_type_known, platform_problems, uses_native_sidecars
from colo.plan.probes import IMAGE_PULL_S, ProbeBudget, startup_budget
from colo.plan.resources import DEFAULT_CPU, DEFAULT_MEMORY, node_fit_problems
from colo.plan.scheduling import DevicePluginPlan, device_plugin, gpu_tolerations, node_selector
from colo.plan.vllm_args import PORTS, vllm_arguments
from colo.plan.weight_sync_step import WeightSyncStep, weight_sync_step
from colo.stackfiles import REPO_ROOT

S3Profile = Callable[[str, str], ModelArchitecture]


@dataclass(frozen=True)
class Server:
    role: str
    name: str  # Kubernetes-friendly: <pair>-<role>
    model: str
    image: str
    vllm_version: str
    port: int
    args: tuple[str, ...]
    probe: ProbeBudget
    cpu: str
    memory: str
    weights_uri: str | None
    memory_plan: ServerPlan

    @property
    def accepts_gpu_uuid(self) -> bool:
        """Whether this server's vLLM resolves CUDA_VISIBLE_DEVICES=GPU-<uuid>; older ones need an index."""
        return self.memory_plan.budget.spec.rules.uuid_in_cuda_visible_devices


@dataclass(frozen=True)
class PairPlan:
    name: str
    servers: tuple[Server, ...]  # in start order; the last is the LLM
    gpu_plan: GpuPlan
    placement: Placement
    weight_syncs: tuple[WeightSyncStep, ...] = ()  # init containers ahead of every server, in start order
    service_account: str | None = None  # storage.syncServiceAccount, for pods that copy from S3

    @property
    def llm(self) -> Server:
        return self.servers[-1]

    @property
    def feasible(self) -> bool:
        return self.gpu_plan.feasible

    @property
    def rollout_seconds(self) -> int:
        """Worst case from pod creation to every server healthy: image pull, a first copy of the weights
        synced from S3, then each startup budget."""
        syncs = sum(step.seconds for step in self.weight_syncs)
        return IMAGE_PULL_S + syncs + sum(server.probe.own_seconds for server in self.servers)


@dataclass(frozen=True)
class Plan:
    config: StackConfig
    gpu: GpuSpec
    pairs: tuple[PairPlan, ...]
    gpus_per_node: int
    node_count: int
    native_sidecars: bool
    problems: tuple[Problem, ...]
    node_selector: dict[str, str]  # what every GPU pod selects
    tolerations: tuple[dict[str, str], ...]  # what every GPU pod tolerates
    device_plugin: DevicePluginPlan | None  # None: DRA, or the node image brings its own plugin
    warnings: tuple[Problem, ...] = ()  # worth a look before deploying, but no reason to refuse

    @property
    def feasible(self) -> bool:
        return not self.problems


def _architecture(server: ServerSpec, path: str, s3_profile: S3Profile | None) -> ModelArchitecture:
    profile = server.profile
    try:
        if profile is None:
            arch = catalog_architecture(server.model)
        elif profile.startswith("s3://"):
            if s3_profile is None:
                raise ArchitectureError(
                    "reading an s3:// profile needs AWS access, which this run does not have"
                )
            arch = s3_profile(profile, server.model)
        else:
            local = Path(profile)
            arch = architecture_from_path(local if local.is_absolute() else REPO_ROOT / local, server.model)
    except KeyError:
        raise ArchitectureError(
            f"'{server.model}' is not in colo's model catalog; set {path}.profile to its config.json, a model "
            f"directory, or an s3:// prefix holding config.json"
        ) from None
    except (OSError, ValueError) as exc:
        raise ArchitectureError(f"cannot read the architecture from {profile}: {exc}") from None
    if server.quantization is not None and server.quantization != arch.quantization:
        arch = arch.with_quantization(server.quantization)
    return arch


def _process_spec(
    server: ServerSpec,
    role: str,
    arch: ModelArchitecture,
    gpu_spec: GpuSpec,
    rules: VllmRules,
    config: StackConfig,
) -> ProcessSpec:
    small = role != "llm"
    max_len = server.max_model_len or (
        min(config.budget.embedding_max_model_len, arch.max_position_embeddings) if small else None
    )
    seqs = server.max_num_seqs or (config.budget.embedding_max_num_seqs if small else None)
    limits = resolve_limits(
        arch,
        gpu_spec,
        rules,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=server.max_num_batched_tokens,
    )
    speculative = server.speculative
    return ProcessSpec(
        arch=arch,
        gpu=gpu_spec,
        rules=rules,
        vllm_version=server.vllm.version,
        limits=limits,
        pooling=small,
        kv_cache_dtype=server.kv_cache_dtype,
        enforce_eager=server.enforce_eager is True,
        capture_sizes=tuple(server.cudagraph_capture_sizes) if server.cudagraph_capture_sizes else None,
        num_speculative_tokens=speculative.num_speculative_tokens if speculative else 0,
        speculative_method=speculative.method if speculative else None,
        gpu_memory_utilization=server.gpu_memory_utilization,
        kv_cache_memory_bytes=server.kv_cache_memory_bytes,
    )


def _servers_of(pair: Pair) -> list[tuple[str, ServerSpec]]:
    order = [("embedding", pair.embedding)]
    if pair.reranker is not None:
        order.append(("reranker", pair.reranker))
    return [*order, ("llm", pair.llm)]


def plan_pair(
    pair: Pair,
    index: int,
    config: StackConfig,
    gpu_spec: GpuSpec,
    placement: Placement,
    native_sidecars: bool,
    s3_profile: S3Profile | None,
) -> tuple[PairPlan | None, list[Problem]]:
    problems: list[Problem] = []
    requests: list[ServerRequest] = []
    for role, server in _servers_of(pair):
        path = f"colo:pairs[{index}].{role}"
        try:
            rules = rules_for(server.vllm.version)
        except ValueError as exc:
            problems.append(Problem(f"{path}.vllm.version", str(exc)))
            continue
        if server.kv_cache_memory_bytes is not None and not rules.has_kv_cache_memory_bytes:
            problems.append(
                Problem(
                    f"{path}.kvCacheMemoryBytes",
                    f"vLLM {server.vllm.version} has no --kv-cache-memory-bytes (added in "
                    f"{first_release_where(lambda r: r.has_kv_cache_memory_bytes)})",
                )
            )
        try:
            arch = _architecture(server, path, s3_profile)
        except ArchitectureError as exc:
            problems.append(Problem(f"{path}.profile" if server.profile else f"{path}.model", str(exc)))
            continue
        if server.speculative and server.speculative.method == "mtp" and arch.mtp_layers == 0:
            problems.append(
                Problem(
                    f"{path}.speculative.method",
                    f"{server.model} has no multi-token-prediction layers (its config sets no "
                    f"mtp_num_hidden_layers or num_nextn_predict_layers), so vLLM cannot start with method mtp; "
                    f"use a draft model method (eagle, eagle3, ngram) or drop speculative",
                )
            )
            continue
        spec = _process_spec(server, role, arch, gpu_spec, rules, config)
        target = config.budget.llm_min_concurrency if role == "llm" else config.budget.embedding_concurrency
        eager = (
            "true" if server.enforce_eager is True else "false" if server.enforce_eager is False else "auto"
        )
        requests.append(ServerRequest(role, path, spec, eager, target))
    if problems:
        return None, problems

    gpu_plan = plan_gpu(gpu_spec, requests, config.budget.safety_margin_mib)
    servers: list[Server] = []
    waited = 0.0
    for (role, server), memory_plan in zip(_servers_of(pair), gpu_plan.servers, strict=True):
        budget = memory_plan.budget
        model_path = weights_dir(pair.name, role) if server.weights_uri else server.model
        args = vllm_arguments(
            budget,
            role=role,
            model=server.model,
            served_name=server.model,
            model_path=model_path,
            extra_args=server.extra_args,
        )
        download = None if server.weights_uri else config.storage.hub_download_mib_per_s
        probe = startup_budget(
            budget,
            read_mib_per_s=config.storage.read_throughput_mib_per_s,
            download_mib_per_s=download,
            waits_for_s=0.0 if native_sidecars else waited,
        )
        waited += probe.own_seconds
        servers.append(
            Server(
                role,
                f"{pair.name}-{role}",
                server.model,
                server.vllm.resolved_image,
                server.vllm.version,
                PORTS[role],
                tuple(args),
                probe,
                server.cpu or DEFAULT_CPU[role],
                server.memory or DEFAULT_MEMORY[role],
                server.weights_uri,
                memory_plan,
            )
        )
    syncs = tuple(step for s in servers if (step := weight_sync_step(pair.name, s, config)) is not None)
    account = config.storage.sync_service_account if syncs else None
    pair_plan = PairPlan(pair.name, tuple(servers), gpu_plan, placement, syncs, account)
    return pair_plan, list(gpu_plan.problems)


def make_plan(
    config: StackConfig, *, s3_profile: S3Profile | None = None, gpu_override: GpuSpec | None = None
) -> Plan:
    """Plan every pair. Problems are collected, never raised, so `colo plan` can show them all."""
    problems = platform_problems(config)
    selector, tolerations = node_selector(config), gpu_tolerations()
    try:
        gpu_spec = gpu_override or gpu(config.node_pool.gpu)
    except KeyError as exc:
        return Plan(
            config,
            GpuSpec("unknown", 0, 0, 0, None, None, {}),
            (),
            1,
            0,
            False,
            (*problems, Problem("colo:nodePool.gpu", str(exc.args[0]))),
            node_selector=selector,
            tolerations=tolerations,
            device_plugin=None,
        )
    per_node = gpus_per_node(config) or 1
    native = uses_native_sidecars(config)
    pool = config.node_pool
    nodes = node_count(len(config.pairs), pool.spare_gpus, per_node)
    problems += node_limit_problems(len(config.pairs), pool.spare_gpus, per_node, pool.max_nodes)
    pairs: list[PairPlan] = []
    placements = place_pairs(len(config.pairs), per_node)
    pods_by_node: dict[int, list[tuple[str, list[tuple[str, str, str]]]]] = {}
    for index, (pair, placement) in enumerate(zip(config.pairs, placements, strict=True)):
        pair_plan, pair_problems = plan_pair(pair, index, config, gpu_spec, placement, native, s3_profile)
        problems += pair_problems
        if pair_plan is not None:
            pairs.append(pair_plan)
            requests = [(s.role, s.cpu, s.memory) for s in pair_plan.servers]
            pods_by_node.setdefault(placement.node, []).append((f"colo:pairs[{index}]", requests))
    used_nodes = len(pods_by_node)
    if used_nodes > 1 and config.storage.access_mode == "ReadWriteOnce":
        problems.append(
            Problem(
                "colo:storage.accessMode",
                f"the pairs run on {used_nodes} nodes, but a ReadWriteOnce volume attaches to one node only; use "
                f"ReadWriteMany or ReadOnlyMany with a storage class that supports it (EFS, say)",
            )
        )
    instance = instance_type(pool.instance_type) if instance_type_known(config) else None
    if instance is not None:
        for pods in pods_by_node.values():
            problems += node_fit_problems(instance, pods)
    # A shared GPU offers as many time-slices as the largest pair has servers.
    servers_per_gpu = max((len(pair.servers) for pair in pairs), default=0)
    return Plan(
        config,
        gpu_spec,
        tuple(pairs),
        per_node,
        nodes,
        native,
        tuple(problems),
        node_selector=selector,
        tolerations=tolerations,
        device_plugin=device_plugin(config, servers_per_gpu),
        warnings=tuple(hub_access_warnings(config)),
    )
