"""One pair's plan: its servers checked, sized together on one GPU, given their flags and probe budgets.

`plan_pair` runs the steps in order, each a function of its own: validate (release and architecture of
every server) -> refusals (what vLLM refuses before sizing: V0 engine, context, TP, batch limits) -> size (the
servers on their GPU, in start order; an LLM with tensorParallelSize N on N GPUs with its companions spread over
them) -> args (`vllm serve` flags) -> probes (startup budgets) -> assemble (the PairPlan, with its weight syncs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from colo.catalog import GpuSpec
from colo.config.calibration import calibrate
from colo.config.schema import Budget, Pair, ServerSpec, StackConfig, Storage
from colo.errors import Problem
from colo.model_volume import weights_dir
from colo.plan.compile_cache import compile_cache
from colo.plan.compute_sharing import (
    THREAD_ENV,
    PairSharing,
    device_plugin_fit_problems,
    pair_clients,
    pair_sharing,
    thread_percentage,
)
from colo.plan.placement import Placement
from colo.plan.probes import IMAGE_PULL_S, ProbeBudget, startup_budget
from colo.plan.server import ModelSource, Server
from colo.plan.weight_sync_step import WeightSyncStep, weight_sync_step
from colo.roles import ROLES, Role
from colo.vllm import (
    ALLOW_LONG_ENV,
    FLASHINFER_SAMPLER_ENV,
    ArchitectureError,
    EngineLimits,
    GpuPlan,
    GroupPlan,
    GroupRequest,
    HubError,
    HubModel,
    ModelArchitecture,
    MpsClient,
    ProcessSpec,
    QuantizationRefused,
    ServerPlan,
    ServerRequest,
    ServerSettings,
    VllmRules,
    architecture_from_path,
    batch_limits_refusal,
    default_max_model_len,
    gpu_as_client,
    kv_cache_memory_bytes_missing,
    named_model,
    plan_gpu,
    plan_group,
    position_ceiling,
    reranker_refusal,
    resolve_architecture,
    resolve_limits,
    rules_for,
    served_architecture,
    vllm_arguments,
    vllm_refusals,
)

S3Profile = Callable[[str, str], ModelArchitecture]


@dataclass(frozen=True)
class GroupLinks:
    """How the GPUs of a node reach one another, which decides a tensor-parallel LLM's communication memory."""

    nvswitch: bool = False  # one NVSwitch board (HGX): NCCL's NVLink SHARP buffers from three ranks
    nvlink: bool = True  # every pair one NVLink hop apart: vLLM's custom all-reduce beyond two ranks


@dataclass(frozen=True)
class PairPlan:
    name: str
    servers: tuple[Server, ...]  # in start order; the last is the LLM
    gpu_plan: GpuPlan | GroupPlan  # GroupPlan: a tensor-parallel LLM, every GPU of its group
    placement: Placement
    weight_syncs: tuple[WeightSyncStep, ...] = ()  # init containers ahead of every server, in start order
    service_account: str | None = None  # storage.syncServiceAccount, for pods that copy from S3
    sharing: PairSharing | None = None  # how its servers share the GPU's compute (cluster.computeSharing)

    @property
    def llm(self) -> Server:
        return self.servers[-1]

    @property
    def feasible(self) -> bool:
        return self.gpu_plan.feasible

    @property
    def group(self) -> GroupPlan | None:
        """The GPUs of a tensor-parallel LLM's group; None for a pair on one GPU."""
        return self.gpu_plan if isinstance(self.gpu_plan, GroupPlan) else None

    @property
    def gpu_count(self) -> int:
        return self.group.tensor_parallel_size if self.group else 1

    @property
    def rollout_seconds(self) -> int:
        """Worst case from pod creation to every server healthy: image pull, a first copy of the weights
        synced from S3, then each startup budget."""
        syncs = sum(step.seconds for step in self.weight_syncs)
        return IMAGE_PULL_S + syncs + sum(server.probe.own_seconds for server in self.servers)


@dataclass(frozen=True)
class CheckedServer:
    """A server whose vLLM release colo mirrors and whose architecture was read: ready to be sized."""

    role: Role
    path: str  # where it is configured: colo:pairs[<index>].<role>
    spec: ServerSpec
    rules: VllmRules
    arch: ModelArchitecture
    hub: HubModel | None = None  # where the architecture came from when it was read from the Hub


def server_architecture(
    server: ServerSpec,
    path: str,
    s3_profile: S3Profile | None,
    profile_root: Path | None = None,
    hub_token: str | None = None,
) -> tuple[ModelArchitecture, HubModel | None]:
    """The profile the server names (a local file or directory, or s3://), else the model by its id: the catalog's
    entry, or the Hub's files at the server's revision. A relative local path is read from `profile_root` (the
    project directory), else the working directory. The Hub read comes back too, for the plan to show."""
    profile = server.profile
    hub: HubModel | None = None
    try:
        if profile is None:
            arch, hub = named_model(server.model, server.revision, token=hub_token)
        elif profile.startswith("s3://"):
            if s3_profile is None:
                raise ArchitectureError(
                    "reading an s3:// profile needs AWS access, which this run does not have"
                )
            arch = s3_profile(profile, server.model)
        else:
            local = Path(profile)
            arch = architecture_from_path((profile_root or Path.cwd()) / local, server.model)
    except HubError:
        raise  # already a sentence, naming the key it is about
    except (OSError, ValueError) as exc:
        raise ArchitectureError(f"cannot read the architecture from {profile}: {exc}") from None
    try:
        return resolve_architecture(arch, server.quantization, vllm_version=server.vllm.rules_version), hub
    except QuantizationRefused as exc:
        raise ArchitectureError(f"quantization: {exc}") from None


def check_server(
    role: Role,
    server: ServerSpec,
    path: str,
    s3_profile: S3Profile | None,
    profile_root: Path | None = None,
    hub_token: str | None = None,
) -> tuple[CheckedServer | None, list[Problem]]:
    """Refuse what vLLM would refuse at start: an unmirrored release, a flag it lacks, an unreadable
    architecture, MTP without MTP layers."""
    try:
        rules = rules_for(server.vllm.rules_version)
    except ValueError as exc:
        return None, [Problem(f"{path}.vllm.version", str(exc))]
    problems: list[Problem] = []
    missing = kv_cache_memory_bytes_missing(rules, server.vllm.rules_version)
    if server.kv_cache_memory_bytes is not None and missing:
        problems.append(Problem(f"{path}.kvCacheMemoryBytes", missing))
    try:
        arch, hub = server_architecture(server, path, s3_profile, profile_root, hub_token)
    except HubError as exc:
        return None, [*problems, Problem(f"{path}.{exc.about}", str(exc))]
    except ArchitectureError as exc:
        return None, [*problems, Problem(f"{path}.profile" if server.profile else f"{path}.model", str(exc))]
    if server.speculative and server.speculative.method == "mtp" and arch.mtp_layers == 0:
        return None, [
            *problems,
            Problem(
                f"{path}.speculative.method",
                f"{server.model} has no multi-token-prediction layers (its config sets no "
                f"mtp_num_hidden_layers or num_nextn_predict_layers), so vLLM cannot start with method mtp; "
                f"use a draft model method (eagle, eagle3, ngram) or drop speculative",
            ),
        ]
    return CheckedServer(role, path, server, rules, arch, hub), problems


def validate_pair(
    pair: Pair,
    index: int,
    s3_profile: S3Profile | None,
    profile_root: Path | None = None,
    hub_token: str | None = None,
) -> tuple[list[CheckedServer], list[Problem]]:
    """Every server of the pair in start order, and every problem found (all servers are checked)."""
    checked: list[CheckedServer] = []
    problems: list[Problem] = []
    for role, server in pair.servers_in_start_order():
        ready, found = check_server(
            role, server, f"colo:pairs[{index}].{role}", s3_profile, profile_root, hub_token
        )
        problems += found
        if ready is not None:
            checked.append(ready)
    return checked, problems


def refusal_problems(checked: list[CheckedServer], gpu_spec: GpuSpec) -> list[Problem]:
    """What vLLM refuses before sizing anything: a V0 engine, a context past the model's, a bad TP size."""
    problems = []
    for server in checked:
        spec = server.spec
        arch = served_architecture(
            server.arch,
            spec.dtype,
            server.rules,
            gpu_spec.compute_capability,
            pooling=ROLES[server.role].pooling,
        )
        settings = ServerSettings(
            version=spec.vllm.rules_version,
            pooling=ROLES[server.role].pooling,
            kv_cache_dtype=spec.kv_cache_dtype,
            speculative_method=spec.speculative.method if spec.speculative else None,
            max_model_len=spec.max_model_len,
            tensor_parallel_size=spec.tensor_parallel_size,
            allow_long_max_model_len=spec.allow_long_max_model_len,
            language_model_only=spec.language_model_only,
            skip_mm_profiling=spec.skip_mm_profiling,
            trust_remote_code=spec.trust_remote_code,
        )
        for refusal in vllm_refusals(server.rules, arch, gpu_spec, settings):
            problems.append(Problem(f"{server.path}.{refusal.key}", refusal.message))
        if server.role is Role.RERANKER and (unscored := reranker_refusal(arch, spec.vllm.rules_version)):
            problems.append(Problem(f"{server.path}.model", unscored))
        try:  # the GPU may lack what the checkpoint's method needs (FP8 below 8.0, say)
            resolve_architecture(
                server.arch,
                spec.quantization,
                vllm_version=spec.vllm.rules_version,
                capability=gpu_spec.compute_capability,
            )
        except QuantizationRefused as exc:
            problems.append(Problem(f"{server.path}.quantization", str(exc)))
    return problems


def vllm_env(checked: CheckedServer) -> tuple[tuple[str, str], ...]:
    """Environment variables vLLM reads instead of flags: the only ones colo sets for vLLM, each classified as
    derived in colo/vllm/memory_inputs.yaml."""
    env: list[tuple[str, str]] = []
    if checked.spec.allow_long_max_model_len:
        env.append((ALLOW_LONG_ENV, "1"))
    if checked.spec.vllm.flashinfer_sampler is not None:
        env.append((FLASHINFER_SAMPLER_ENV, "1" if checked.spec.vllm.flashinfer_sampler else "0"))
    return tuple(env)


def mps_env(config: StackConfig, checked: CheckedServer) -> tuple[tuple[str, str], ...]:
    """A capped MPS client's share of the GPU's threads, which CUDA reads as the process starts."""
    if config.cluster.compute_sharing != "mps" or checked.spec.mps_active_thread_percentage is None:
        return ()
    return ((THREAD_ENV, str(thread_percentage(config, checked.spec))),)


def server_limits(checked: CheckedServer, gpu_spec: GpuSpec, budget: Budget) -> EngineLimits:
    """The engine limits vLLM will run with: the server's own, else the budget's for the small servers,
    else vLLM's defaults."""
    server, arch = checked.spec, checked.arch
    small = ROLES[checked.role].pooling
    # a companion's default length stays within what vLLM derives (a sentence-transformers max_seq_length
    # included): vLLM refuses a longer --max-model-len at startup (refusals.max_model_len_refusal)
    max_len = server.max_model_len or (
        min(
            budget.embedding_max_model_len,
            position_ceiling(arch, checked.rules),
            default_max_model_len(arch, checked.rules),
        )
        if small
        else None
    )
    seqs = server.max_num_seqs or (budget.embedding_max_num_seqs if small else None)
    return resolve_limits(
        arch,
        gpu_spec,
        checked.rules,
        max_model_len=max_len,
        max_num_seqs=seqs,
        max_num_batched_tokens=server.max_num_batched_tokens,
        pooling=small,
        language_model_only=server.language_model_only,
        mm_limits=server.limit_mm_per_prompt,
    )


def batch_limit_problems(checked: list[CheckedServer], gpu_spec: GpuSpec, budget: Budget) -> list[Problem]:
    """Engine limits vLLM's scheduler config refuses at start (a batch smaller than max_num_seqs, or than a whole
    input where the model does not chunk), the budget's companion defaults included."""
    return [
        Problem(f"{server.path}.{refusal.key}", refusal.message)
        for server in checked
        if (refusal := batch_limits_refusal(server_limits(server, gpu_spec, budget))) is not None
    ]


def process_spec(
    checked: CheckedServer,
    gpu_spec: GpuSpec,
    budget: Budget,
    mps: MpsClient | None = None,
    links: GroupLinks = GroupLinks(),
) -> ProcessSpec:
    """The process vLLM will run, with the engine limits of `server_limits`; one rank's, at the server's
    tensor-parallel size. As an MPS client (`mps`) its context is the client's, whatever a calibration says."""
    server, arch = checked.spec, checked.arch
    small = ROLES[checked.role].pooling
    limits = server_limits(checked, gpu_spec, budget)
    speculative = server.speculative
    spec = ProcessSpec(
        arch=served_architecture(
            arch, server.dtype, checked.rules, gpu_spec.compute_capability, pooling=small
        ),
        gpu=gpu_spec,
        rules=checked.rules,
        vllm_version=server.vllm.rules_version,
        limits=limits,
        pooling=small,
        kv_cache_dtype=server.kv_cache_dtype,
        dtype=server.dtype,
        enforce_eager=server.enforce_eager is True,
        capture_sizes=tuple(server.cudagraph_capture_sizes) if server.cudagraph_capture_sizes else None,
        num_speculative_tokens=speculative.num_speculative_tokens if speculative else 0,
        speculative_method=speculative.method if speculative else None,
        gpu_memory_utilization=server.gpu_memory_utilization,
        kv_cache_memory_bytes=server.kv_cache_memory_bytes,
        language_model_only=server.language_model_only,
        mm_limits=tuple(sorted((server.limit_mm_per_prompt or {}).items())),
        skip_mm_profiling=server.skip_mm_profiling,
        flashinfer_installed=server.vllm.sampler_flashinfer,
        flashinfer_in_image=server.vllm.flashinfer_installed,
        torch_release=server.vllm.torch_release,
        tensor_parallel_size=server.tensor_parallel_size,
        nvswitch=links.nvswitch,
        nvlink=links.nvlink,
    )
    spec = calibrate(spec, budget.calibration)
    return spec if mps is None else replace(spec, gpu=gpu_as_client(spec.gpu, mps))


def _eager_setting(server: ServerSpec) -> str:
    return "true" if server.enforce_eager is True else "false" if server.enforce_eager is False else "auto"


def _request(
    server: CheckedServer,
    gpu_spec: GpuSpec,
    budget: Budget,
    links: GroupLinks = GroupLinks(),
    mps: MpsClient | None = None,
) -> ServerRequest:
    return ServerRequest(
        server.role,
        server.path,
        process_spec(server, gpu_spec, budget, mps, links),
        _eager_setting(server.spec),
        budget.embedding_concurrency if ROLES[server.role].pooling else budget.llm_min_concurrency,
        pin_kv=budget.kv_cache_sizing == "pinned",
        seqs_derived=server.spec.max_num_seqs is None and not ROLES[server.role].pooling,
    )


def size_pair(
    checked: list[CheckedServer],
    gpu_spec: GpuSpec,
    budget: Budget,
    mps: Sequence[MpsClient | None] | None = None,
) -> GpuPlan:
    """Every server sized on the pair's GPU in start order; the LLM, last, takes what is left. `mps`: each
    server's MPS client figures, in the same order, under computeSharing mps."""
    clients = list(mps) if mps is not None else [None] * len(checked)
    requests = [
        _request(server, gpu_spec, budget, mps=client)
        for server, client in zip(checked, clients, strict=True)
    ]
    return plan_gpu(gpu_spec, requests, budget.safety_margin_mib)


def size_group(
    pair: Pair, index: int, checked: list[CheckedServer], gpu_spec: GpuSpec, budget: Budget, links: GroupLinks
) -> GroupPlan:
    """A tensor-parallel LLM and its companions on the GPUs of its group: each companion on the GPU the pair
    gives it, then a rank of the LLM on every GPU."""
    gpus = pair.group_gpus()
    llm, *companions = sorted(checked, key=lambda s: s.role is not Role.LLM)
    request = GroupRequest(
        f"colo:pairs[{index}]",
        _request(llm, gpu_spec, budget, links),
        tuple((_request(s, gpu_spec, budget, links), gpus[s.role]) for s in companions),
        pair.rank_balance,
    )
    return plan_group(gpu_spec, request, budget.safety_margin_mib)


def server_args(pair_name: str, checked: CheckedServer, memory_plan: ServerPlan) -> tuple[str, ...]:
    """`vllm serve` arguments; a server whose weights are synced from S3 loads them from the volume."""
    server = checked.spec
    model_path = weights_dir(pair_name, checked.role) if server.weights_uri else server.model
    args = vllm_arguments(
        memory_plan.budget,
        role=checked.role,
        model=server.model,
        served_name=server.model,
        model_path=model_path,
        extra_args=server.extra_args,
        revision=loaded_revision(checked),
        trust_remote_code=server.trust_remote_code,
    )
    return tuple(args)


def startup_probes(
    checked: list[CheckedServer], gpu_plan: GpuPlan | GroupPlan, storage: Storage, native_sidecars: bool
) -> list[ProbeBudget]:
    """Each server's startup budget; without native sidecars it also waits for the servers before it."""
    probes: list[ProbeBudget] = []
    waited = 0.0
    for server, memory_plan in zip(checked, gpu_plan.servers, strict=True):
        download = None if server.spec.weights_uri else storage.hub_download_mib_per_s
        probe = startup_budget(
            memory_plan.budget,
            read_mib_per_s=storage.read_throughput_mib_per_s,
            download_mib_per_s=download,
            waits_for_s=0.0 if native_sidecars else waited,
        )
        waited += probe.own_seconds
        probes.append(probe)
    return probes


def model_source(checked: CheckedServer) -> ModelSource:
    hub = checked.hub
    if hub is not None:
        return ModelSource("hub", hub.repo_id, hub.revision, hub.commit, hub.notes)
    return ModelSource("profile" if checked.spec.profile else "catalog")


def loaded_revision(checked: CheckedServer) -> str | None:
    """The revision vLLM is told to load: the commit colo sized where the stack pins one (a branch or tag moves;
    the commit it resolved to at plan time does not), the pin as written where a profile stood in for the Hub."""
    server = checked.spec
    if server.revision is None or server.weights_uri is not None:
        return None
    return checked.hub.commit if checked.hub is not None else server.revision


def assemble_pair(
    pair_name: str,
    checked: list[CheckedServer],
    gpu_plan: GpuPlan | GroupPlan,
    args: list[tuple[str, ...]],
    probes: list[ProbeBudget],
    placement: Placement,
    config: StackConfig,
    sharing: PairSharing | None = None,
) -> PairPlan:
    servers = tuple(
        Server(
            ready.role,
            f"{pair_name}-{ready.role}",
            ready.spec.model,
            ready.spec.vllm.resolved_image,
            ready.spec.vllm.version,
            ROLES[ready.role].port,
            server_args,
            probe,
            ready.spec.cpu or ROLES[ready.role].cpu,
            ready.spec.memory or ROLES[ready.role].memory,
            ready.spec.weights_uri,
            memory_plan,
            vllm_env(ready) + mps_env(config, ready),
            model_source(ready),
            ready.hub is not None and ready.hub.gated,
            compile_cache(
                pair_name,
                ready.role,
                ready.spec.vllm.version,
                ready.spec.vllm.resolved_image,
                server_args,
                volume_writable=config.storage.access_mode != "ReadOnlyMany",
            ),
        )
        for ready, memory_plan, server_args, probe in zip(
            checked, gpu_plan.servers, args, probes, strict=True
        )
    )
    syncs = tuple(step for s in servers if (step := weight_sync_step(pair_name, s, config)) is not None)
    account = config.storage.sync_service_account if syncs else None
    return PairPlan(pair_name, servers, gpu_plan, placement, syncs, account, sharing)


def plan_pair(
    pair: Pair,
    index: int,
    config: StackConfig,
    gpu_spec: GpuSpec,
    placement: Placement,
    native_sidecars: bool,
    s3_profile: S3Profile | None,
    links: GroupLinks = GroupLinks(),
) -> tuple[PairPlan | None, list[Problem]]:
    """The pair's plan and its problems; None when a server could not be sized at all."""
    token = config.hub_token.get_secret_value() if config.hub_token else None
    checked, problems = validate_pair(pair, index, s3_profile, config.project_dir, token)
    problems += refusal_problems(checked, gpu_spec)
    problems += batch_limit_problems(checked, gpu_spec, config.budget)
    clients, unmeasured = pair_clients(config, index, pair.servers_in_start_order(), gpu_spec)
    problems += unmeasured
    if problems:
        return None, problems
    gpu_plan: GpuPlan | GroupPlan = (
        size_group(pair, index, checked, gpu_spec, config.budget, links)
        if pair.tensor_parallel_size > 1
        else size_pair(checked, gpu_spec, config.budget, clients)
    )
    args = [
        server_args(pair.name, server, plan) for server, plan in zip(checked, gpu_plan.servers, strict=True)
    ]
    probes = startup_probes(checked, gpu_plan, config.storage, native_sidecars)
    limits = {plan.role: plan.budget.spec.limits for plan in gpu_plan.servers}
    sharing = pair_sharing(config, pair, gpu_spec, clients, limits)
    pair_plan = assemble_pair(pair.name, checked, gpu_plan, args, probes, placement, config, sharing)
    # a group under MPS is refused with the platform (colo.plan.platform.group_pairing_problems)
    fit = device_plugin_fit_problems(config, gpu_plan) if isinstance(gpu_plan, GpuPlan) else []
    return pair_plan, [*gpu_plan.problems, *fit]
