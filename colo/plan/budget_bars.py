"""A plan's GPUs as pictures' data: each process's memory split into the parts nvidia-smi will see, in start order.

A process's parts add up to its footprint (colo.vllm's ProcessBudget.footprint_bytes), each read from the
budget's own figures: the CUDA context, weights, activation peak, CUDA graphs, non-torch memory and KV cache,
and what it holds beyond them once it serves (warm-up leftovers, unbudgeted communication buffers: the
footprint's remainder). Where 0.34's extensible KV cache sizes the pool after warm-up (`budget.measured`), the
parts are that sizing's: the activation share is the transient kept free plus what stays allocated, and the KV
cache its committed pages as the driver maps them. A part the budget puts below zero (a KV pool when the
weights do not fit) is drawn as nothing and said in a note.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.plan.pair import PairPlan
from colo.plan.picture import STYLES, GpuBar, Kind, ProcessBar, Segment, gib, svg
from colo.plan.stack import Plan
from colo.vllm import GroupPlan, ProcessBudget


def process_parts(budget: ProcessBudget) -> dict[Kind, int]:
    """The footprint's parts in bytes, possibly negative where the budget is (they add up to the footprint)."""
    graphs = budget.graphs.resident_bytes
    parts: dict[Kind, int] = {
        "context": budget.context_bytes,
        "weights": budget.weights_bytes,
        "activation": budget.activation_bytes,
        # the graph-profile executables the capture reuses are counted once, in the non-torch figure
        "graphs": graphs - budget.graph_profile_in_non_torch,
        "non_torch": budget.non_torch_bytes,
        "kv": budget.kv_bytes,
    }
    measured = budget.measured
    if measured is not None and budget.capacity is not None:
        # footprint = context + non_kv + physical + transient + after-startup; non_kv holds the weights,
        # non-torch memory, the graphs as captured and the activations that stay allocated
        persistent = measured.non_kv_bytes - budget.weights_bytes - budget.non_torch_bytes - graphs
        parts["graphs"] = graphs
        parts["activation"] = persistent + measured.transient_bytes
        parts["kv"] = measured.physical_bytes
    parts["other"] = budget.footprint_bytes - sum(parts.values())
    return parts


def process_bar(name: str, budget: ProcessBudget) -> tuple[ProcessBar, list[str]]:
    parts = process_parts(budget)
    notes = [
        f"{name}: {STYLES[kind].label} {gib(value)} GiB in the budget, drawn as none"
        for kind, value in parts.items()
        if value < 0
    ]
    segments = tuple(Segment(kind, max(value, 0)) for kind, value in parts.items())
    return ProcessBar(name, segments), notes


def _bars(named: list[tuple[str, ProcessBudget]]) -> tuple[tuple[ProcessBar, ...], tuple[str, ...]]:
    bars, notes = [], []
    for name, budget in named:
        bar, server_notes = process_bar(name, budget)
        bars.append(bar)
        notes += server_notes
    return tuple(bars), tuple(notes)


def server_bars(pair: PairPlan) -> tuple[ProcessBar, ...]:
    """Each server of the pair in start order (a tensor-parallel LLM as the rank that sizes it): the plan
    table's rows."""
    return _bars([(server.name, server.memory_plan.budget) for server in pair.servers])[0]


def gpu_bar(pair: PairPlan) -> GpuBar:
    """The GPU a one-GPU pair runs on, its servers in start order."""
    gpu_plan = pair.gpu_plan
    bars, notes = _bars([(server.name, server.memory_plan.budget) for server in pair.servers])
    title = f"GPU {pair.placement.gpu} of node {pair.placement.node} ({gpu_plan.gpu.name}, pair {pair.name})"
    return GpuBar(title, gpu_plan.gpu.cuda_total_bytes, bars, gpu_plan.safety_margin_bytes, notes)


def _group_bars(pair: PairPlan, group: GroupPlan) -> tuple[GpuBar, ...]:
    """Every GPU of a tensor-parallel LLM's group: the companions the plan put on it, then the LLM's rank."""
    companions = [server.name for server in pair.servers[:-1]]
    pictures = []
    for k, plan in enumerate(group.gpus):
        names = [n for n, g in zip(companions, group.companion_gpus, strict=True) if g == k]
        names.append(f"{pair.llm.name} rank {k}")
        bars, notes = _bars([(n, s.budget) for n, s in zip(names, plan.servers, strict=True)])
        title = (
            f"GPU {pair.placement.gpu + k} of node {pair.placement.node} ({group.gpu.name}, pair {pair.name}, "
            f"rank {k} of tensor parallel {group.tensor_parallel_size})"
        )
        pictures.append(GpuBar(title, group.gpu.cuda_total_bytes, bars, group.safety_margin_bytes, notes))
    return tuple(pictures)


def gpu_bars(pair: PairPlan) -> tuple[GpuBar, ...]:
    """Every GPU the pair runs on, in the node's order."""
    return _group_bars(pair, pair.group) if pair.group is not None else (gpu_bar(pair),)


@dataclass(frozen=True)
class PairPicture:
    """A pair as `colo plan` draws it: its servers' parts (the table's rows) and every GPU it runs on."""

    processes: tuple[ProcessBar, ...]
    gpus: tuple[GpuBar, ...]


def pair_picture(pair: PairPlan) -> PairPicture:
    return PairPicture(server_bars(pair), gpu_bars(pair))


def gpu_index(plan: Plan, pair: PairPlan) -> int:
    """The number of the pair's first GPU across the node pool: node × GPUs a node + GPU."""
    return pair.placement.node * plan.gpus_per_node + pair.placement.gpu


def svg_files(plan: Plan, prefix: str) -> dict[str, str]:
    """`<prefix>gpu-<n>.svg` -> the picture of GPU n's budget, for every GPU a pair runs on."""
    return {
        f"{prefix}gpu-{gpu_index(plan, pair) + k}.svg": svg(bar)
        for pair in plan.pairs
        for k, bar in enumerate(gpu_bars(pair))
    }
