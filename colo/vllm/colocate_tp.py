"""A tensor-parallel LLM over the N GPUs of one node, with its companions spread over the same GPUs.

vLLM runs one worker per rank, each on its own GPU, and every worker sizes itself the way one process does
(colo.vllm.process.budget at tensor_parallel_size N): each checks the free memory of its own GPU at its own
snapshot (`Worker.init_device`), and the engine keeps the smallest block count of all ranks ("Change the
num_blocks of each rank to the smallest among all ranks", `vllm 0.33.0 / 0.34.0 v1/core/kv_cache_planning.py::
get_kv_cache_configs`; under 0.34's extensible KV cache `_min_across_ranks` in `v1/worker/gpu_worker.py` and
`finalize_extensible_kv_cache`). `--gpu-memory-utilization` is one flag for every rank. So every rank takes the
slice that the fullest GPU of the group leaves, and whatever an emptier GPU keeps beyond it no rank can use.

The companions start first (colo.roles), each on one GPU of the group and sized for its own target as on a
shared GPU (colo.vllm.colocate, whose pieces this module reuses); then every rank finds what its GPU's
companions left. The fullest GPU sizes the LLM, and every other rank is checked on its own GPU. Where the
companions leave the GPUs unequal, `equalize` hands each emptier GPU's difference to its last companion (a larger
KV cache instead of idle memory), and `refuse` refuses the layout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import floor
from typing import Literal

from colo.catalog import GIB, MIB, GpuSpec
from colo.errors import Problem
from colo.vllm.colocate import (
    UTIL_STEP,
    GpuPlan,
    ServerPlan,
    ServerRequest,
    finish_gpu,
    pin_pool,
    room_for_last,
    server_problems,
    size_in_order,
    size_server,
    slack_beside,
)
from colo.vllm.process.budget import size_process

RankBalance = Literal["equalize", "refuse"]


@dataclass(frozen=True)
class GroupRequest:
    config_path: str  # the pair's: colo:pairs[<i>]
    llm: ServerRequest  # its spec's tensor_parallel_size is the group's GPU count
    companions: tuple[tuple[ServerRequest, int], ...]  # in start order, each with its GPU of the group
    balance: RankBalance = "equalize"

    @property
    def size(self) -> int:
        return self.llm.spec.tensor_parallel_size


@dataclass(frozen=True)
class GroupPlan:
    gpu: GpuSpec
    gpus: tuple[GpuPlan, ...]  # in rank order: GPU k holds its companions, then the LLM's rank k
    servers: tuple[
        ServerPlan, ...
    ]  # the pair's servers in start order; the LLM as the rank whose pool is kept
    companion_gpus: tuple[int, ...]  # the GPU of the group of each companion, in start order
    binding: int  # the fullest GPU: its rank sizes the LLM
    idle_bytes: tuple[
        int, ...
    ]  # per GPU: memory no server can use, since every rank takes the fullest's slice
    safety_margin_bytes: int
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()

    @property
    def tensor_parallel_size(self) -> int:
        return len(self.gpus)

    @property
    def llm(self) -> ServerPlan:
        return self.servers[-1]

    @property
    def used_bytes(self) -> int:
        """nvidia-smi's "used" of the fullest GPU of the group."""
        return max(g.used_bytes for g in self.gpus)

    @property
    def free_bytes(self) -> int:
        return min(g.free_bytes for g in self.gpus)

    @property
    def feasible(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class _Ranks:
    """The LLM's ranks beside the companions as they are sized: one per GPU, the binding one first sized."""

    ranks: tuple[ServerPlan, ...]
    free: tuple[int, ...]  # what each rank finds free when it starts
    slack: tuple[int, ...]  # what each GPU must keep free
    binding: int
    idle: tuple[int, ...]


def _rank_on(first: ServerPlan, free_before: int) -> ServerPlan:
    """The rank that `first` describes, started on a GPU with `free_before` free: the same flags, its own
    snapshot; a pinned pool (--kv-cache-memory-bytes) is the same on every rank."""
    return replace(first, budget=size_process(first.budget.spec, free_before_bytes=free_before))


def _size_ranks(gpu: GpuSpec, llm: ServerRequest, companions: list[list[ServerPlan]], margin: int) -> _Ranks:
    """Every rank after the companions: the GPU that offers the least sizes the LLM (ties: the one with the
    least free, whose pool is smallest where the budget is global), every other rank is that rank on its GPU."""
    total = gpu.cuda_total_bytes
    free = tuple(total - sum(s.budget.footprint_bytes for s in on_gpu) for on_gpu in companions)
    slack = tuple(slack_beside(on_gpu, margin) for on_gpu in companions)
    rooms = [room_for_last(llm, f, s) for f, s in zip(free, slack, strict=True)]
    binding = min(range(len(free)), key=lambda k: (rooms[k], free[k], k))
    first = size_server(llm, free[binding], slack[binding], last=True)
    ranks = tuple(first if k == binding else _rank_on(first, free[k]) for k in range(len(free)))
    if first.budget.global_accounting:
        # the request covers the whole GPU: what a rank's pool exceeds the smallest by
        kept = min(r.budget.kv_bytes for r in ranks)
        idle = tuple(r.budget.kv_bytes - kept for r in ranks)
    else:  # the request is the same on every rank: what each GPU could have given beyond the binding one
        idle = tuple(room - rooms[binding] for room in rooms)
    return _Ranks(ranks, free, slack, binding, idle)


def _grown(
    server: ServerPlan, request: ServerRequest, free_before: int, extra: int, note: str
) -> ServerPlan | None:
    """The companion with its utilization raised so that it holds at most `extra` bytes more, or None where not
    one step of the flag fits (its pool must still come from its request)."""
    total = server.budget.spec.gpu.cuda_total_bytes
    steps = floor(extra / total * UTIL_STEP)
    while steps > 0:
        util = round(server.utilization + steps / UTIL_STEP, 3)
        spec = replace(
            server.budget.spec,
            gpu_memory_utilization=util,
            kv_cache_memory_bytes=request.spec.kv_cache_memory_bytes,
        )
        budget = size_process(spec, free_before_bytes=free_before)
        if request.pin_kv:
            budget = pin_pool(budget, free_before)
        from_request = budget.measured is None or budget.measured.bound == "requested"
        if budget.ok and from_request and budget.footprint_bytes - server.budget.footprint_bytes <= extra:
            return replace(server, budget=budget, notes=(*server.notes, note.format(util=util)))
        steps -= 1
    return None


def _equalize(
    path: str, companions: list[list[ServerPlan]], placed: list[list[ServerRequest]], ranks: _Ranks
) -> list[list[ServerPlan]]:
    """Each emptier GPU's difference to its last companion, where colo derived that one's utilization."""
    out = [list(on_gpu) for on_gpu in companions]
    for k, extra in enumerate(ranks.idle):
        if not out[k] or not out[k][-1].utilization_derived:
            continue
        *earlier, last = out[k]
        free_before = last.budget.spec.gpu.cuda_total_bytes - sum(s.budget.footprint_bytes for s in earlier)
        note = (
            f"utilization raised from {last.utilization} to {{util}} ({path}.rankBalance: equalize): every rank of "
            f"the LLM takes the slice GPU {ranks.binding} of its group leaves (the fullest), so the "
            f"{extra / GIB:.2f} GiB more that GPU {k} offers would idle"
        )
        grown = _grown(last, placed[k][-1], free_before, extra, note)
        if grown is not None:
            out[k][-1] = grown
    return out


def _companion_problems(
    companions: list[list[ServerPlan]], placed: list[list[ServerRequest]], margin: int
) -> list[list[Problem]]:
    """Each companion checked where it starts: after the ones before it on its GPU."""
    found: list[list[Problem]] = []
    for on_gpu, requests in zip(companions, placed, strict=True):
        problems: list[Problem] = []
        free = on_gpu[0].budget.spec.gpu.cuda_total_bytes if on_gpu else 0
        for server, request in zip(on_gpu, requests, strict=True):
            problems += server_problems(server, request, free, margin, margin)
            free -= server.budget.footprint_bytes
        found.append(problems)
    return found


def _balance(request: GroupRequest, ranks: _Ranks, step: int) -> tuple[list[Problem], list[str]]:
    """What the idle memory left after balancing means: refused, or said."""
    idle = [(k, extra) for k, extra in enumerate(ranks.idle) if extra >= step]
    if not idle:
        return [], []
    where = ", ".join(f"GPU {k} {extra / GIB:.2f} GiB" for k, extra in idle)
    why = (
        f"every rank of the LLM takes the slice that GPU {ranks.binding} of its group, the fullest, leaves (vLLM "
        f"gives every rank one gpu-memory-utilization and keeps the smallest KV pool of all ranks)"
    )
    if request.balance == "refuse":
        return [
            Problem(
                f"{request.config_path}.rankBalance",
                f"the companions leave the GPUs of the LLM's group unequal free memory, and {why}: {where} would "
                f"idle [fix: place the companions so that every GPU holds as much (groupGpu), or rankBalance: "
                f"equalize, which gives it to the companions of the emptier GPUs]",
            )
        ], []
    return [], [
        f"idle beside the LLM's ranks: {where}, since {why}; a companion placed there (groupGpu) would use it"
    ]


def _grouped_problems(per_gpu: list[list[Problem]]) -> list[Problem]:
    """Every GPU's problems, each once, naming the GPUs of the group it was found on."""
    found: dict[tuple[str, str], list[int]] = {}
    for k, problems in enumerate(per_gpu):
        for problem in problems:
            found.setdefault((problem.path, problem.message), []).append(k)
    return [
        Problem(path, f"(GPU {', '.join(map(str, gpus))} of the group) {message}")
        for (path, message), gpus in found.items()
    ]


def _pair_servers(
    request: GroupRequest, plans: list[GpuPlan], keeper: int
) -> tuple[tuple[ServerPlan, ...], tuple[int, ...]]:
    """The pair's servers in start order, read back from their GPUs' plans (which carry the shared-GPU notes)."""
    taken = [0] * len(plans)
    servers: list[ServerPlan] = []
    for _, k in request.companions:
        servers.append(plans[k].servers[taken[k]])
        taken[k] += 1
    servers.append(plans[keeper].servers[-1])
    return tuple(servers), tuple(k for _, k in request.companions)


def plan_group(gpu: GpuSpec, request: GroupRequest, safety_margin_mib: int) -> GroupPlan:
    """The companions on their GPUs, then the LLM's ranks on every GPU of the group, balanced as the pair asks."""
    margin = safety_margin_mib * MIB
    size = request.size
    placed = [[r for r, k in request.companions if k == gpu_index] for gpu_index in range(size)]
    # each sized for its own target; their problems are found below, once balancing has settled their sizes
    companions = [size_in_order(gpu, on_gpu, margin, last_takes_rest=False)[0] for on_gpu in placed]
    ranks = _size_ranks(gpu, request.llm, companions, margin)
    # below two steps of the three-decimal flag (one on the companion raised, one in the rounding of the
    # requests) a difference cannot be handed over: it is neither balanced nor refused
    step = 2 * gpu.cuda_total_bytes // UTIL_STEP
    if request.balance == "equalize" and any(extra >= step for extra in ranks.idle):
        companions = _equalize(request.config_path, companions, placed, ranks)
        ranks = _size_ranks(gpu, request.llm, companions, margin)
    per_gpu = _companion_problems(companions, placed, margin)
    for k, rank in enumerate(ranks.ranks):
        per_gpu[k] += server_problems(rank, request.llm, ranks.free[k], ranks.slack[k], margin)
    plans = [
        finish_gpu(gpu, [*on_gpu, ranks.ranks[k]], margin, per_gpu[k]) for k, on_gpu in enumerate(companions)
    ]
    keeper = min(range(size), key=lambda k: (ranks.ranks[k].budget.kv_bytes, k != ranks.binding, k))
    servers, companion_gpus = _pair_servers(request, plans, keeper)
    balance_problems, notes = _balance(request, ranks, step)
    problems = _grouped_problems([list(p.problems) for p in plans]) + balance_problems
    return GroupPlan(
        gpu,
        tuple(plans),
        servers,
        companion_gpus,
        ranks.binding,
        ranks.idle,
        margin,
        tuple(problems),
        tuple(notes),
    )
