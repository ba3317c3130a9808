"""`colo pack`'s search: packings judged by the plan, the solver's choice, and the whole stack planned again
before a layout is offered.

Steps: the candidate instance types (colo.pack.candidates) -> every packing of every LLM on each GPU model,
cheapest GPU models first and only as far as they could still matter (colo.pack.packings) -> the solver's
best layout (colo.pack.solver) -> the whole stack planned as
`colo plan` plans it; a refusal becomes a cut and the solver tries again -> the next best on another instance
type, as alternatives. Why nothing cheaper fits is said by colo.pack.explain.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from colo.pack.candidates import Candidate, Candidates, candidates
from colo.pack.engine import StackCheck, check_stack
from colo.pack.packings import Companions, Packing, Refusal, companion_options, evaluate, pair_values
from colo.pack.requirements import PackRequest
from colo.pack.solver import Choice, Option, Programme, solve

MIB = 2**20
MAX_CUTS = 25  # whole-stack refusals tolerated on one instance type before it is given up


@dataclass(frozen=True)
class Layout:
    candidate: Candidate
    nodes: int
    packings: tuple[Packing, ...]  # one per LLM, in the stack's pair order
    spare_mib: int
    values: dict[str, Any]  # the stack's colo: values
    check: StackCheck

    @property
    def usd_per_hour(self) -> float:
        return self.nodes * self.candidate.price.usd_per_hour

    @property
    def gpus(self) -> int:
        return self.nodes * self.candidate.instance.gpus


@dataclass
class Search:
    """The packings planned so far, GPU model by GPU model, and the layouts the solver makes of them.

    GPU models are planned cheapest first (by the least a layout on them could cost); once the layouts found
    cost no more than what any unplanned GPU model could, the rest are never planned."""

    request: PackRequest
    candidates: Candidates
    packings: dict[tuple[int, Companions, str], Packing] = field(default_factory=dict)
    refusals: dict[tuple[int, Companions, str], Refusal] = field(default_factory=dict)
    given_up: dict[str, str] = field(default_factory=dict)  # types the whole-stack plan kept refusing
    evaluated: set[str] = field(default_factory=set)  # GPU models planned

    def evaluate_gpu(self, gpu_name: str) -> None:
        """Every LLM with each companion choice on one GPU model. A choice whose companions hold at least as
        much, in a group of the same size, as ones the LLM already fell short beside is refused without planning
        (see Refusal.llm_side)."""
        request = self.request
        widest = self.widest_node(gpu_name)
        held: dict[tuple[Companions, int], int] = {}  # what each companion choice holds at a group size
        for index, llm in enumerate(request.llms):
            short: Refusal | None = None
            for companions in sorted(companion_options(request, llm), key=lambda c: held.get((c, 1), 0)):
                key = (index, companions, gpu_name)
                if short is not None and held.get((companions, short.size), -1) >= short.companions_mib:
                    self.refusals[key] = replace(short, companions=companions)
                    continue
                outcome = evaluate(request, index, companions, gpu_name, widest)
                if isinstance(outcome, Packing):
                    self.packings[key] = outcome
                    held[(companions, outcome.gpus)] = outcome.check.companions_mib
                    continue
                self.refusals[key] = outcome
                if outcome.companions_mib:
                    held[(companions, outcome.size)] = outcome.companions_mib
                if outcome.llm_side and (short is None or outcome.companions_mib < short.companions_mib):
                    short = outcome
        self.evaluated.add(gpu_name)

    def widest_node(self, gpu_name: str) -> int:
        """The most GPUs of this model one searched instance type has: the largest tensor-parallel group."""
        return max(
            (c.instance.gpus for c in self.candidates.searched if c.instance.gpu == gpu_name), default=1
        )

    def evaluate_all(self) -> None:
        for gpu_name in self.candidates.gpus:
            if gpu_name not in self.evaluated:
                self.evaluate_gpu(gpu_name)

    def programme(self, types: Sequence[Candidate]) -> Programme:
        request = self.request
        return Programme(
            llms=len(request.llms),
            embeddings=len(request.embeddings),
            reranker_replicas=tuple(r.replicas or 1 for r in request.rerankers),
            spare_gpus=request.spare_gpus,
            max_nodes=request.base.get("nodePool", {}).get("maxNodes"),
            options=tuple(_option(p) for p in self.packings.values()),
            node_types=tuple(c.node_type for c in types if c.instance.gpu in self.evaluated),
        )

    def layout(self, choice: Choice, request: PackRequest | None = None) -> Layout:
        """The solver's choice as a stack, planned whole (with `request`'s settings, when given)."""
        request = request or self.request
        candidate = next(c for c in self.candidates.allowed if c.node_type == choice.node_type)
        packings = tuple(
            self.packings[(o.llm, Companions(o.embedding, o.reranker), o.gpu)] for o in choice.options
        )
        values = stack_values(request, candidate, packings)
        return Layout(
            candidate, choice.nodes, packings, choice.spare_mib, values, check_stack(values, request.region)
        )

    def next_layout(self, programme: Programme, excluded: set[str]) -> Layout | None:
        """The best layout off the excluded types that the whole-stack plan accepts."""
        cuts: list[Choice] = []
        while (choice := solve(programme, frozenset(excluded), cuts)) is not None:
            layout = self.layout(choice)
            if layout.check.feasible:
                return layout
            cuts.append(choice)
            if sum(1 for c in cuts if c.node_type == choice.node_type) >= MAX_CUTS:
                self.given_up[choice.node_type.name] = str(layout.check.problems[0])
                excluded.add(choice.node_type.name)
        return None

    def _best_planned(self, count: int) -> list[Layout]:
        """The best layouts on `count` different instance types, among the GPU models planned so far."""
        programme = self.programme(self.candidates.searched)
        skip, found = set(self.given_up), list[Layout]()
        while len(found) < count and (layout := self.next_layout(programme, skip)) is not None:
            found.append(layout)
            skip.add(layout.candidate.name)
        return found

    def _pending(self) -> list[tuple[float, str]]:
        """Unplanned GPU models, with the least a layout on one of their instance types could cost."""
        bounds: dict[str, float] = {}
        for candidate in self.candidates.searched:
            gpu_name = candidate.instance.gpu
            bounds[gpu_name] = min(bounds.get(gpu_name, float("inf")), candidate.lowest_cost(self.request))
        return sorted((bound, name) for name, bound in bounds.items() if name not in self.evaluated)

    def layouts(self, count: int) -> list[Layout]:
        """The best layouts on `count` different instance types, cheapest first: GPU models are planned until
        none left unplanned could give a layout as cheap as the last one found."""
        while True:
            found = self._best_planned(count)
            pending = self._pending()
            if not pending or (len(found) == count and pending[0][0] > found[-1].usd_per_hour + 1e-9):
                return found
            self.evaluate_gpu(pending[0][1])


def _option(packing: Packing) -> Option:
    check = packing.check
    companions = packing.companions
    return Option(
        packing.llm,
        companions.embedding,
        companions.reranker,
        packing.gpu,
        check.group_used_mib,
        check.cpu_millis,
        check.memory_bytes // MIB,
        packing.gpus,
    )


def stack_values(request: PackRequest, candidate: Candidate, packings: Sequence[Packing]) -> dict[str, Any]:
    """The colo: values of the stack a layout is: the base settings, the node pool pack chose, the budget that
    carries the minimums, and the pairs in the LLMs' order."""
    instance = candidate.instance
    node_pool = {
        **request.base.get("nodePool", {}),
        "gpu": instance.gpu,
        "instanceType": instance.name,
        "spareGpus": request.spare_gpus,
    }
    pairs = [
        pair_values(request, request.llms[p.llm], p.companions, p.llm_server)
        for p in sorted(packings, key=lambda p: p.llm)
    ]
    return {**request.planning_base(written=True), "nodePool": node_pool, "pairs": pairs}


@dataclass(frozen=True)
class Searched:
    search: Search
    layouts: tuple[Layout, ...]  # the best first; empty when nothing fits
    seconds: float


def run_search(request: PackRequest, alternatives: int = 3) -> Searched:
    """The cheapest layout `colo plan` accepts that meets every minimum, and up to `alternatives` more on
    other instance types."""
    started = time.perf_counter()
    search = Search(request, candidates(request))
    layouts = search.layouts(1 + alternatives)
    return Searched(search, tuple(layouts), time.perf_counter() - started)
