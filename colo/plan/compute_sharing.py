"""How the servers of one GPU share its compute (cluster.computeSharing), per GPU pairing method, and what it costs.

time-slice is the driver's default: kernels of two CUDA contexts never run at the same instant. mps makes every
server a client of one CUDA MPS server, so their kernels run concurrently and a companion can be held to a share of
the GPU's threads (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). The route to MPS depends on the pairing method:

- uuid-handoff and time-slice: an MPS control daemon in the pair's own pod, a native sidecar started before the
  servers (colo.components.mps_daemon); on time-slice nodes it takes one more slice of the GPU;
- dra: NVIDIA's DRA driver starts the daemon for the pod's claim (GpuConfig sharing strategy MPS), which needs
  the driver's MPSSupport feature gate, which the stack must confirm;
- time-slice with a device plugin managed elsewhere that shares by MPS: the plugin's daemon, whose equal split of
  threads and memory per replica must hold every server of the pair.

Memory under MPS comes from measured figures only (colo.vllm.mps); a GPU without them is refused. The cost a plan
states comes from colo's own measurements (colo/catalog/interference.yaml), each labelled with what it ran on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from colo.catalog import MIB, GpuSpec
from colo.catalog.interference import Measurement, SharingSetting, interference_measurements
from colo.catalog.mps import mps_figures
from colo.config.schema import ComputeSharing, Pair, ServerSpec, StackConfig
from colo.errors import Problem
from colo.plan.platform import uses_native_sidecars
from colo.roles import Role
from colo.vllm import EngineLimits, GpuPlan, MpsClient, mps_client, rules_for, unmeasured_reason

MpsRoute = Literal["in-pod daemon", "dra driver", "device plugin"]
THREAD_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
# The DRA driver's gate for `sharing.strategy: MPS` (kubernetes-sigs/dra-driver-nvidia-gpu
# pkg/featuregates/featuregates.go: MPSSupport, alpha, off by default, from v25.8.0 to v0.4.1 and main).
DRA_MPS_GATE = "MPSSupport"
ROUTE_TEXT: dict[MpsRoute, str] = {
    "in-pod daemon": "an MPS control daemon in the pair's pod, started before the servers",
    "dra driver": f"NVIDIA's DRA driver, MPS sharing on the pod's claim ({DRA_MPS_GATE} gate)",
    "device plugin": "the device plugin's own MPS daemon (an equal share per replica)",
}


def mps_route(config: StackConfig) -> MpsRoute | None:
    """Who runs the MPS control daemon for the stack's pairs; None under time-slice."""
    if config.cluster.compute_sharing != "mps":
        return None
    method = config.cluster.gpu_pairing
    if method == "dra":
        return "dra driver"
    if method == "time-slice" and config.node_pool.device_plugin.shares_by == "mps":
        return "device plugin"
    return "in-pod daemon"


def daemon_slices(config: StackConfig) -> int:
    """GPU slices a pair's pod takes beyond its servers': the in-pod daemon's own, on time-slicing nodes."""
    in_pod = mps_route(config) == "in-pod daemon"
    return 1 if in_pod and config.cluster.gpu_pairing == "time-slice" else 0


def _capped(pair: Pair, index: int) -> list[tuple[str, Role, ServerSpec]]:
    return [
        (f"colo:pairs[{index}].{role}", role, server)
        for role, server in pair.servers()
        if server.mps_active_thread_percentage is not None
    ]


def _cap_problems(config: StackConfig) -> list[Problem]:
    problems: list[Problem] = []
    for index, pair in enumerate(config.pairs):
        for path, role, _ in _capped(pair, index):
            key = f"{path}.mpsActiveThreadPercentage"
            if config.cluster.compute_sharing != "mps":
                problems.append(
                    Problem(
                        key,
                        "caps a server's share of the GPU's threads under CUDA MPS only; set "
                        "cluster.computeSharing: mps, or remove it",
                    )
                )
            elif role is Role.LLM:
                problems.append(
                    Problem(
                        key,
                        "the LLM is the server a pair protects and runs uncapped; cap its companions "
                        "(embedding, reranker) instead",
                    )
                )
    return problems


def _uuid_problems(config: StackConfig) -> list[Problem]:
    """Under MPS, CUDA numbers a client's devices as the MPS server sees them (NVIDIA's MPS documentation,
    CUDA_VISIBLE_DEVICES), so the nvidia-smi index the uuid-handoff script gives releases before 0.24 would name
    a device the server does not have; only a GPU UUID is unambiguous."""
    problems: list[Problem] = []
    for index, pair in enumerate(config.pairs):
        for role, server in pair.servers():
            try:
                takes_uuid = rules_for(server.vllm.version).uuid_in_cuda_visible_devices
            except ValueError:
                continue  # refused at vllm.version
            if not takes_uuid:
                problems.append(
                    Problem(
                        f"colo:pairs[{index}].{role}.vllm.version",
                        f"computeSharing mps with uuid-handoff points every server at the pair's GPU by its UUID "
                        f"(CUDA_VISIBLE_DEVICES=GPU-...), which vLLM {server.vllm.version} does not resolve; under "
                        f"MPS the nvidia-smi index it needs instead counts the MPS server's devices, not the "
                        f"node's. Use vLLM >= 0.24, or gpuPairing time-slice or dra",
                    )
                )
    return problems


def _route_problems(config: StackConfig) -> list[Problem]:
    cluster = config.cluster
    route = mps_route(config)
    problems: list[Problem] = []
    if cluster.dra_mps_support and route != "dra driver":
        problems.append(
            Problem(
                "colo:cluster.draMpsSupport",
                "confirms the DRA driver's MPS support for gpuPairing dra with computeSharing mps only; remove it",
            )
        )
    if route == "dra driver" and not cluster.dra_mps_support:
        problems.append(
            Problem(
                "colo:cluster.draMpsSupport",
                f"computeSharing mps with gpuPairing dra puts GpuConfig sharing strategy MPS on each pod's claim, "
                f"which NVIDIA's DRA driver accepts only with its {DRA_MPS_GATE} feature gate on (alpha, off by "
                f"default; kubernetes-sigs/dra-driver-nvidia-gpu v25.8.0 or later, not together with DynamicMIG or "
                f"ConsumableShares), else the claim is never prepared and the pod never starts. Enable the gate "
                f"(helm --set featureGates.{DRA_MPS_GATE}=true) and confirm it with draMpsSupport: true, or use "
                f"computeSharing time-slice",
            )
        )
    if route == "in-pod daemon" and not uses_native_sidecars(config):
        problems.append(
            Problem(
                "colo:cluster.computeSharing",
                "mps starts the pair's MPS control daemon as a native sidecar (a restartable init container), so "
                "that kubelet starts the servers only once it answers; this cluster runs none (nativeSidecars, "
                "Kubernetes >= 1.29). Enable them, or use computeSharing time-slice",
            )
        )
    if route == "in-pod daemon" and cluster.gpu_pairing == "uuid-handoff":
        problems += _uuid_problems(config)
    return problems


def sharing_problems(config: StackConfig) -> list[Problem]:
    """What refuses the stack's compute sharing before any pair is sized."""
    return _cap_problems(config) + _route_problems(config)


def thread_percentage(config: StackConfig, server: ServerSpec) -> int | None:
    """The client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; a plugin's daemon caps every client at 100/replicas
    (k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go), and a client's own setting can only lower it."""
    own = server.mps_active_thread_percentage
    plugin = config.node_pool.device_plugin
    if mps_route(config) == "device plugin" and plugin.shared_replicas:
        share = 100 // plugin.shared_replicas
        return share if own is None else min(own, share)
    return own


def pair_clients(
    config: StackConfig, index: int, servers: Sequence[tuple[Role, ServerSpec]], gpu: GpuSpec
) -> tuple[list[MpsClient | None], list[Problem]]:
    """Each server's MPS client figures, in start order (the first also holds the MPS server); Nones under
    time-slice. A figure colo has not measured refuses the pair."""
    if config.cluster.compute_sharing != "mps":
        return [None for _ in servers], []
    figures = mps_figures(gpu.name)
    if figures is None or not figures.measured:
        reason = unmeasured_reason(figures, gpu.name, 100)
        return [None for _ in servers], [
            Problem("colo:cluster.computeSharing", f"{reason}; until then use computeSharing time-slice")
        ]
    problems: list[Problem] = []
    for role, server in servers:
        percentage = thread_percentage(config, server) or 100
        if (reason := unmeasured_reason(figures, gpu.name, percentage)) is not None:
            own = server.mps_active_thread_percentage is not None
            path = (
                f"colo:pairs[{index}].{role}.mpsActiveThreadPercentage"
                if own
                else "colo:cluster.computeSharing"
            )
            problems += [] if Problem(path, reason) in problems else [Problem(path, reason)]
    if problems:
        return [None for _ in servers], problems
    return [
        mps_client(figures, thread_percentage(config, server), first=position == 0)
        for position, (_, server) in enumerate(servers)
    ], []


def device_plugin_fit_problems(config: StackConfig, gpu_plan: GpuPlan) -> list[Problem]:
    """The plugin's MPS mode gives each replica total/replicas of pinned memory and 100/replicas % of the threads
    (k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go); every server must fit its equal share as planned."""
    if mps_route(config) != "device plugin":
        return []
    replicas = config.node_pool.device_plugin.shared_replicas or 1
    total = gpu_plan.gpu.cuda_total_bytes
    share = total // replicas
    over = [s for s in gpu_plan.servers if s.budget.footprint_bytes > share]
    problems = [
        Problem(
            s.config_path,
            f"the device plugin's MPS mode splits the GPU equally: each of its {replicas} replicas gets "
            f"{100 // replicas} % of the threads and {share / MIB:,.0f} MiB of memory (total/{replicas}), but this "
            f"server holds {s.budget.footprint_bytes / MIB:,.0f} MiB as planned. An unequal pair cannot be expressed "
            f"with the plugin's MPS; use its time-slicing with computeSharing mps (colo's own daemon in the pod), or "
            f"gpuPairing dra",
        )
        for s in over
    ]
    if problems:
        return problems
    figures = mps_figures(gpu_plan.gpu.name)
    answer = figures.mem_get_info_reports_pinned_limit if figures is not None else None
    if answer is not False:
        why = (
            "has not been measured (bench/gpu/measure_mps.py)"
            if answer is None
            else "is what cudaMemGetInfo reports as the total, so vLLM's --gpu-memory-utilization would be a share "
            "of the limit, which colo does not size"
        )
        problems.append(
            Problem(
                "colo:nodePool.devicePlugin.sharesBy",
                f"under the device plugin's MPS mode each server runs within a pinned-memory limit, and whether that "
                f"limit {why} on {gpu_plan.gpu.name}; use the plugin's time-slicing with computeSharing mps",
            )
        )
    return problems


@dataclass(frozen=True)
class SharingCost:
    """What the plan can say about the pair's cost under its sharing mode, and from which measurement."""

    measurement: Measurement | None
    exact: bool  # the measurement ran this very pair (GPU, vLLM, models)
    setting: SharingSetting | None  # the row of the pair's mode, cap and companion flags, where measured
    baseline: SharingSetting | None  # time-slice with no flags, for the companions' cost under mps
    levers: tuple[SharingSetting, ...] = ()  # the pair's mode and cap with other companion flags, measured
    mps_rows: tuple[SharingSetting, ...] = ()  # under time-slice: the uncapped MPS rows, what switching buys


@dataclass(frozen=True)
class PairSharing:
    mode: ComputeSharing
    route: MpsRoute | None
    caps: tuple[tuple[Role, int], ...]  # companions' thread percentages, where capped
    clients: tuple[MpsClient | None, ...]  # in start order
    cost: SharingCost
    companion_flags: tuple[str, ...] | None = ()  # what a measurement row can name (companion_flags)

    @property
    def companion_cap(self) -> int | None:
        """The one cap every companion has, which a measurement row can match; None: uncapped."""
        caps = {cap for _, cap in self.caps}
        return caps.pop() if len(caps) == 1 else None


def _closeness(m: Measurement, gpu: str, vllm: str, llm: str, companions: tuple[str, ...]) -> tuple[int, ...]:
    return (m.llm == llm, set(m.companions) == set(companions), m.gpu == gpu, m.vllm == vllm)


def sharing_cost(
    mode: ComputeSharing,
    cap: int | None,
    gpu: str,
    vllm: str,
    llm: str,
    companions: tuple[str, ...],
    flags: tuple[str, ...] | None = (),
) -> SharingCost:
    """The measurement closest to this pair (the same LLM first, then companions, GPU, release), and its rows.
    `flags`: the companions' flags a row can name (None: companions that differ, which no row matches)."""
    measurements = interference_measurements()
    if not measurements:
        return SharingCost(None, False, None, None)
    best = max(measurements, key=lambda m: _closeness(m, gpu, vllm, llm, companions))
    exact = all(_closeness(best, gpu, vllm, llm, companions))
    setting = best.setting(mode, cap, flags) if flags is not None else None
    levers = best.levers(mode, cap, flags if flags is not None else ())
    mps_rows = (
        tuple(s for s in best.settings if s.sharing == "mps" and s.companion_cap is None)
        if mode == "time-slice"
        else ()
    )
    return SharingCost(best, exact, setting, best.setting("time-slice", None), levers, mps_rows)


# Companion settings a measurement row may name by the vLLM flag it ran with, and the stack key that sets it.
COMPANION_FLAG_KEYS = {"--max-num-batched-tokens": "maxNumBatchedTokens"}


def companion_flags(pair: Pair, limits: Mapping[Role, EngineLimits]) -> tuple[str, ...] | None:
    """The flags, among those a row can name, every companion runs with beyond colo's defaults; None where the
    companions differ. `limits`: each server's engine limits as the plan resolved them (resolve_limits): a
    maxNumBatchedTokens that leaves the batch vLLM sets unset (equal to that default, or replaced by vLLM) runs
    what the rows measured at colo's defaults ran, so it is no flag."""
    batches = {
        None if limits[role].batched_tokens_as_unset else server.max_num_batched_tokens
        for role, server in pair.servers()
        if role is not Role.LLM
    }
    if len(batches) != 1:
        return None
    (batch,) = batches
    return () if batch is None else ("--max-num-batched-tokens", str(batch))


def _flags_text(flags: tuple[str, ...]) -> str:
    if not flags:
        return "colo's defaults"
    return ", ".join(
        f"{COMPANION_FLAG_KEYS.get(flag, flag)} {value}"
        for flag, value in zip(flags[::2], flags[1::2], strict=True)
    )


def pair_sharing(
    config: StackConfig,
    pair: Pair,
    gpu: GpuSpec,
    clients: Sequence[MpsClient | None],
    limits: Mapping[Role, EngineLimits],
) -> PairSharing:
    mode = config.cluster.compute_sharing
    caps = tuple(
        (role, share)
        for role, server in pair.servers()
        if role is not Role.LLM and (share := thread_percentage(config, server)) is not None
    )
    companions = tuple(server.model for role, server in pair.servers() if role is not Role.LLM)
    cap_values = {share for _, share in caps}
    cap = cap_values.pop() if len(cap_values) == 1 and len(caps) == len(companions) else None
    flags = companion_flags(pair, limits)
    cost = sharing_cost(mode, cap, gpu.name, pair.llm.vllm.version, pair.llm.model, companions, flags)
    if caps and cap is None:  # companions capped differently, or some not at all: no row matches
        cost = replace(cost, setting=None)
    return PairSharing(mode, mps_route(config), caps, tuple(clients), cost, flags)


def _percent(value: float | None) -> str:
    return "not measured" if value is None else f"{value:+.0f} %"


def _latency(setting: SharingSetting) -> str:
    c = setting.llm_cost_percent
    return (
        f"TTFT {_percent(c.get('c1_ttft'))}, TPOT {_percent(c.get('c1_tpot'))} at concurrency 1; "
        f"TTFT {_percent(c.get('c16_ttft'))}, TPOT {_percent(c.get('c16_tpot'))} at 16"
    )


def _per_s(setting: SharingSetting) -> str:
    low, high = setting.companion_per_s
    return f"{low:g}-{high:g} requests/s"


def _alone(m: Measurement) -> str:
    c1, c16 = m.alone.get("c1", {}), m.alone.get("c16", {})
    return (
        f"alone: TTFT {c1.get('ttft_ms')} ms, TPOT {c1.get('tpot_ms')} ms at 1; "
        f"TTFT {c16.get('ttft_ms')} ms, TPOT {c16.get('tpot_ms')} ms at 16"
    )


def _mode_text(sharing: PairSharing) -> str:
    if sharing.mode != "mps":
        return "time-slice (the driver's default: the servers' kernels take turns on the GPU)"
    caps = (
        ", ".join(f"{role} at {share} % of the threads" for role, share in sharing.caps)
        or "companions uncapped"
    )
    route = ROUTE_TEXT[sharing.route] if sharing.route else ""
    return f"mps, through {route}; {caps}"


def _companions_text(sharing: PairSharing) -> str:
    if sharing.caps and sharing.companion_cap is None:
        return "these caps"
    cap = f"the companions at {sharing.companion_cap} % threads" if sharing.caps else "uncapped companions"
    flags = sharing.companion_flags
    if flags is None:
        return f"{cap}, each with its own maxNumBatchedTokens"
    return f"{cap} at {_flags_text(flags)}" if flags else cap


def cost_lines(sharing: PairSharing) -> list[str]:
    """The plan's sentences on the pair's sharing: its mode, then the measured cost, labelled."""
    lines = [f"compute sharing: {_mode_text(sharing)}"]
    clients = [client.describe() for client in sharing.clients if client is not None]
    lines += (
        [f"  memory outside vLLM's budget (colo/catalog/mps.yaml): {'; '.join(clients)}"] if clients else []
    )
    cost = sharing.cost
    m = cost.measurement
    if m is None:
        return [
            *lines,
            "  cost: colo holds no interference measurement; measure it in place with `colo load`",
        ]
    where = "measured on this pair" if cost.exact else "NOT measured on this pair; colo's nearest measurement"
    lines += [
        f"  cost, {where}: {m.gpu}, vLLM {m.vllm}, {m.llm} beside {' and '.join(m.companions)}",
        f"    (LLM: {m.llm_load}; companions: {m.companion_load}; {m.noise})",
        f"    LLM {_alone(m)}",
    ]
    if cost.setting is None:
        lines.append(f"    {sharing.mode} with {_companions_text(sharing)} was not measured there")
    else:
        lines.append(
            f"    {sharing.mode}, LLM beside busy companions: {_latency(cost.setting)}; companions "
            f"{_per_s(cost.setting)}"
        )
    lines += [
        f"    measured there too, companions at {_flags_text(lever.companion_flags)}: LLM {_latency(lever)}; "
        f"companions {_per_s(lever)}"
        for lever in cost.levers
    ]
    lines += [
        f"    mps instead, companions uncapped at {_flags_text(row.companion_flags)}: LLM {_latency(row)}; "
        f"companions {_per_s(row)}"
        for row in cost.mps_rows
    ]
    if sharing.mode == "mps" and cost.baseline is not None:
        lines.append(
            f"    time-slice instead: LLM {_latency(cost.baseline)}; companions {_per_s(cost.baseline)}"
        )
    if not cost.exact:
        lines.append("    measure your own pair in place: colo load")
    return lines


def _row_view(row: SharingSetting) -> dict[str, Any]:
    return {
        "companion_flags": list(row.companion_flags),
        "llm_cost_percent": dict(row.llm_cost_percent),
        "companion_per_s": list(row.companion_per_s),
    }


def sharing_view(sharing: PairSharing) -> dict[str, Any]:
    cost = sharing.cost
    m = cost.measurement
    return {
        "mode": sharing.mode,
        "route": sharing.route,
        "thread_percentages": {str(role): share for role, share in sharing.caps},
        "mps_clients": [client.describe() if client else None for client in sharing.clients],
        "cost": None
        if m is None
        else {
            "measurement": m.id,
            "measured_on": m.label,
            "exact": cost.exact,
            "llm_cost_percent": dict(cost.setting.llm_cost_percent) if cost.setting else None,
            "companion_per_s": list(cost.setting.companion_per_s) if cost.setting else None,
            "time_slice_companion_per_s": list(cost.baseline.companion_per_s) if cost.baseline else None,
            "levers": [_row_view(lever) for lever in cost.levers],
            "mps_instead": [_row_view(row) for row in cost.mps_rows],
            "source": m.source,
        },
        "lines": cost_lines(sharing),
    }
