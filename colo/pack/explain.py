"""Why a layout is the best: what each cheaper instance type could not hold, what no instance type meets,
and how the request's own settings (a ReadWriteOnce volume, a stack's current layout) bear on the price."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import ceil

from colo.catalog import gpu, instance_type
from colo.catalog.prices import region_prices
from colo.errors import ColoError, Problem
from colo.pack.candidates import STORAGE_REASON, Candidate
from colo.pack.packings import companion_options
from colo.pack.requirements import PackRequest
from colo.pack.search import Layout, Search, Searched, run_search
from colo.pack.solver import solve


class PackInfeasibleError(ColoError):
    """No allowed instance type holds the request: each problem names the model and the minimum."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, "no allowed instance type can hold this; nothing was written:")


@dataclass(frozen=True)
class Passed:
    """An instance type that is not in the answer, what it would have cost at best, and why not."""

    instance: str
    usd_per_hour: float
    reason: str


@dataclass(frozen=True)
class PackResult:
    request: PackRequest
    layouts: tuple[Layout, ...]  # the best first
    passed: tuple[
        Passed, ...
    ]  # instance types that could have cost less than the best, and why they hold none
    notes: tuple[str, ...]
    evaluations: int
    seconds: float
    current: Passed | None = None  # the stack's own layout, when pack read one


def why_not(search: Search, candidate: Candidate) -> str:
    """What keeps an instance type out: first an LLM that fits its GPU with none of its companions, or only over
    more GPUs than its node has, then the platform, the volume, the GPUs the groups take, or the whole-stack
    plan."""
    request, name = search.request, candidate.name
    gpu_name, width = candidate.instance.gpu, candidate.instance.gpus
    if gpu_name not in search.evaluated:
        search.evaluate_gpu(gpu_name)
    groups: list[tuple[str, int]] = []
    for index, llm in enumerate(request.llms):
        options = companion_options(request, llm)
        packings = [p for c in options if (p := search.packings.get((index, c, gpu_name))) is not None]
        if not packings:
            return search.refusals[(index, options[0], gpu_name)].reason
        narrowest = min(packings, key=lambda p: p.gpus)
        if narrowest.gpus > width:
            fewer = f"; on {narrowest.gpus // 2}: {narrowest.narrower}" if narrowest.narrower else ""
            return (
                f"{llm.name} on {gpu_name} needs {narrowest.gpus} GPUs of one node (tensorParallelSize "
                f"{narrowest.gpus}), more than a node of {name} has ({width}){fewer}"
            )
        groups.append((llm.name, narrowest.gpus))
    if name in search.candidates.refused:
        return search.candidates.refused[name]
    if name in search.candidates.single_node_only:
        return STORAGE_REASON
    if name in search.given_up:
        return search.given_up[name]
    wide = [f"{llm} on {gpus}" for llm, gpus in groups if gpus > 1]
    if wide:
        needed = sum(gpus for _, gpus in groups) + request.spare_gpus
        nodes = ceil(needed / width)
        return (
            f"its pairs take {needed} GPUs with the spare ones ({', '.join(wide)} as tensor-parallel groups): "
            f"{nodes} nodes at ${nodes * candidate.price.usd_per_hour:.3f}/h"
        )
    return "the pairs' CPU and memory requests, or the companions' counts, do not fit its nodes"


def passed_over(search: Search, layouts: Sequence[Layout]) -> tuple[Passed, ...]:
    """Every allowed instance type that could have cost less than the best layout, and why it holds none."""
    best = layouts[0].usd_per_hour
    chosen = {layout.candidate.name for layout in layouts}
    passed = [
        Passed(c.name, c.lowest_cost(search.request), why_not(search, c))
        for c in search.candidates.allowed
        if c.name not in chosen and c.lowest_cost(search.request) < best
    ]
    return tuple(sorted(passed, key=lambda p: p.usd_per_hour))


def _largest_gpu(names: Sequence[str]) -> str:
    return max(names, key=lambda name: gpu(name).cuda_total_bytes)


def infeasible(search: Search) -> PackInfeasibleError:
    """Which model and which minimum no allowed instance type meets; else why each type holds no layout."""
    request = search.request
    gpus = search.candidates.gpus
    search.evaluate_all()
    problems = []
    for index, llm in enumerate(request.llms):
        if any(key[0] == index for key in search.packings):
            continue
        largest = _largest_gpu(gpus)
        refusal = next(r for k, r in search.refusals.items() if k[0] == index and k[2] == largest)
        problems.append(
            Problem(
                f"{request.origin}: {llm.source}",
                f"{llm.server['model']} cannot be met on any allowed instance type in {request.region}; on the "
                f"largest GPU there ({largest}): {refusal.reason}",
            )
        )
    if not problems:
        problems = [
            Problem(f"{request.origin}: {c.name}", why_not(search, c)) for c in search.candidates.allowed
        ]
    return PackInfeasibleError(problems)


def single_node_note(search: Search, best: Layout) -> str | None:
    """What a ReadWriteMany volume would save, when a ReadWriteOnce one kept multi-node layouts out."""
    single = search.candidates.single_node_only
    if not single:
        return None
    types = [c for c in search.candidates.allowed if c.name not in search.candidates.refused]
    choice = solve(search.programme(types), frozenset())
    if choice is None or choice.usd_per_hour >= best.usd_per_hour - 1e-9:
        return None
    storage = {**search.request.base.get("storage", {}), "accessMode": "ReadWriteMany"}
    shared = replace(search.request, base={**search.request.base, "storage": storage})
    layout = search.layout(choice, shared)
    if not layout.check.feasible:
        return None
    return (
        f"with a ReadWriteMany model volume (colo:storage.accessMode, and a storage class that offers it), "
        f"{layout.nodes} x {layout.candidate.name} would cost ${layout.usd_per_hour:.3f}/h; this stack's "
        f"ReadWriteOnce volume keeps every pair on one node"
    )


def current_layout(request: PackRequest) -> Passed | None:
    """The stack's own instance type and node count, priced in its region, for comparison."""
    if request.current_instance is None:
        return None
    instance = instance_type(request.current_instance)
    price = region_prices(request.region).get(request.current_instance)
    if instance is None or price is None:
        return Passed(request.current_instance, 0.0, f"no sourced price in {request.region}")
    nodes = ceil((len(request.llms) + request.spare_gpus) / instance.gpus)
    return Passed(instance.name, nodes * price.usd_per_hour, f"{nodes} x {instance.name}")


def pack(request: PackRequest, alternatives: int = 3) -> PackResult:
    """Search, then explain: the layouts, the cheaper types passed over, and notes; or why nothing fits."""
    searched: Searched = run_search(request, alternatives)
    search, layouts = searched.search, searched.layouts
    if not layouts:
        raise infeasible(search)
    notes = list(request.notes)
    note = single_node_note(search, layouts[0])
    if note:
        notes.append(note)
    return PackResult(
        request,
        layouts,
        passed_over(search, layouts),
        tuple(notes),
        len(search.packings) + len(search.refusals),
        searched.seconds,
        current_layout(request),
    )
