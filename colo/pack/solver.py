"""The choice of instance type, node count and packings, as a small integer programme solved by HiGHS.

Variables: x[o] = 1 when packing o (an LLM with its companions on a GPU model, on one GPU or a tensor-parallel
group of them) is used; y[t] = 1 for the one instance type the node pool uses (a stack has one node pool); n[t]
its node count. Constraints: every LLM gets exactly one packing on the chosen type's GPU; every embedding runs
beside at least one LLM and every reranker beside exactly its replicas; the nodes hold the pairs' GPUs and the
spare GPUs, a group no wider than one node (group and node sizes are powers of two, so GPUs that add up also
place without a stranded GPU), and the pods' CPU and memory requests; cuts exclude combinations the
whole-stack plan refused. Objectives in order, each held at its best
while the next is minimised: $/h, then nodes, then spare GPU memory (what no server holds).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import highspy

UNBOUNDED_NODES = 10_000


@dataclass(frozen=True)
class Option:
    """A feasible packing, as the programme sees it."""

    llm: int
    embedding: int
    reranker: int | None
    gpu: str
    used_mib: int  # over every GPU the pair takes
    cpu_millis: int
    memory_mib: int
    gpus: int = 1  # the LLM's tensor-parallel group


@dataclass(frozen=True)
class NodeType:
    name: str
    gpu: str
    gpus: int
    usd_per_hour: float
    gpu_mib: int  # each GPU's total, as CUDA reports it
    cpu_millis: int  # what one node offers pods
    memory_mib: int


@dataclass(frozen=True)
class Programme:
    llms: int
    embeddings: int
    reranker_replicas: tuple[int, ...]
    spare_gpus: int
    max_nodes: int | None
    options: tuple[Option, ...]
    node_types: tuple[NodeType, ...]


@dataclass(frozen=True)
class Choice:
    node_type: NodeType
    nodes: int
    options: tuple[Option, ...]  # one per LLM, in LLM order
    spare_mib: int

    @property
    def usd_per_hour(self) -> float:
        return self.nodes * self.node_type.usd_per_hour


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """HiGHS prints a banner on the process's stdout when its first solver is built, before any option can
    turn output off; `colo pack --format json` must print JSON alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _new_highs() -> highspy.Highs:
    return highspy.Highs()  # type: ignore[no-untyped-call]  # highspy's __init__ carries no annotations


@cache
def _banner_printed() -> bool:
    with _quiet_stdout():
        _new_highs()
    return True


def _solver() -> highspy.Highs:
    _banner_printed()
    h = _new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-9)
    return h


class _Model:
    """One programme built into a HiGHS instance, for a set of allowed node types and cuts."""

    def __init__(self, programme: Programme, types: Sequence[NodeType], cuts: Sequence[Choice]) -> None:
        self.p = programme
        self.types = list(types)
        gpus = {t.gpu for t in self.types}
        self.options = [o for o in programme.options if o.gpu in gpus]
        h = self.h = _solver()
        self.x = [h.addBinary() for _ in self.options]
        self.y = [h.addBinary() for _ in self.types]
        top = programme.max_nodes or UNBOUNDED_NODES
        self.n = [h.addIntegral(lb=0, ub=top) for _ in self.types]
        h.addConstr(h.qsum(self.y) == 1)
        self._one_packing_per_llm(gpus)
        self._companions()
        self._nodes(top)
        self._cuts(cuts)

    def _one_packing_per_llm(self, gpus: set[str]) -> None:
        for llm in range(self.p.llms):
            for gpu in gpus:
                used = [x for x, o in zip(self.x, self.options, strict=True) if o.llm == llm and o.gpu == gpu]
                chosen = [y for y, t in zip(self.y, self.types, strict=True) if t.gpu == gpu]
                self.h.addConstr(self.h.qsum(used) - self.h.qsum(chosen) == 0)

    def _companions(self) -> None:
        h = self.h
        for embedding in range(self.p.embeddings):
            beside = [x for x, o in zip(self.x, self.options, strict=True) if o.embedding == embedding]
            h.addConstr(h.qsum(beside) >= 1)
        for reranker, replicas in enumerate(self.p.reranker_replicas):
            beside = [x for x, o in zip(self.x, self.options, strict=True) if o.reranker == reranker]
            h.addConstr(h.qsum(beside) == replicas)

    def _nodes(self, top: int) -> None:
        for y, n, t in zip(self.y, self.n, self.types, strict=True):
            self._gpus_of(y, n, t)
            self.h.addConstr(n - top * y <= 0)
            self._pairs_that_outgrow(y, t)
        for gpu in {t.gpu for t in self.types}:
            self._cpu_and_memory_of(gpu)

    def _gpus_of(self, y: highspy.highs_var, n: highspy.highs_var, node: NodeType) -> None:
        """The chosen type's nodes hold every pair's GPUs and the spare ones; a type not chosen holds none, so
        its constraint is relaxed by the most GPUs the pairs could take."""
        h, p = self.h, self.p
        most = sum(max((o.gpus for o in self.options if o.llm == llm), default=1) for llm in range(p.llms))
        taken = h.qsum([o.gpus * x for x, o in zip(self.x, self.options, strict=True) if o.gpu == node.gpu])
        h.addConstr(node.gpus * n - taken - (p.spare_gpus + most) * y >= -most)

    def _cpu_and_memory_of(self, gpu: str) -> None:
        """The pods' CPU and memory requests fit the nodes of that GPU model."""
        h = self.h
        pairs = [(x, o) for x, o in zip(self.x, self.options, strict=True) if o.gpu == gpu]
        nodes = [(n, t) for n, t in zip(self.n, self.types, strict=True) if t.gpu == gpu]
        cpu = h.qsum([o.cpu_millis * x for x, o in pairs]) - h.qsum([t.cpu_millis * n for n, t in nodes])
        memory = h.qsum([o.memory_mib * x for x, o in pairs]) - h.qsum([t.memory_mib * n for n, t in nodes])
        h.addConstr(cpu <= 0)
        h.addConstr(memory <= 0)

    def _pairs_that_outgrow(self, y: highspy.highs_var, node: NodeType) -> None:
        """A pair whose pod alone asks more GPUs, CPU or memory than one node offers cannot use that type."""
        for x, o in zip(self.x, self.options, strict=True):
            too_big = o.gpus > node.gpus or o.cpu_millis > node.cpu_millis or o.memory_mib > node.memory_mib
            if o.gpu == node.gpu and too_big:
                self.h.addConstr(x + y <= 1)

    def _cuts(self, cuts: Sequence[Choice]) -> None:
        index = {o: i for i, o in enumerate(self.options)}
        for cut in cuts:
            if cut.node_type not in self.types:
                continue
            y = self.y[self.types.index(cut.node_type)]
            used = [self.x[index[o]] for o in cut.options]
            self.h.addConstr(self.h.qsum(used) + y <= self.p.llms)

    def solve(self) -> Choice | None:
        h = self.h
        cost = h.qsum([t.usd_per_hour * n for n, t in zip(self.n, self.types, strict=True)])
        nodes = h.qsum(self.n)
        spare = h.qsum([t.gpus * t.gpu_mib * n for n, t in zip(self.n, self.types, strict=True)]) - h.qsum(
            [o.used_mib * x for x, o in zip(self.x, self.options, strict=True)]
        )
        for objective, slack in ((cost, 1e-6), (nodes, 0.5), (spare, None)):
            h.minimize(objective)
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            if slack is not None:
                h.addConstr(objective <= h.getObjectiveValue() + slack)
        return self._choice()

    def _choice(self) -> Choice:
        h = self.h
        chosen = next(i for i, y in enumerate(self.y) if h.val(y) > 0.5)
        options = sorted(
            (o for x, o in zip(self.x, self.options, strict=True) if h.val(x) > 0.5), key=lambda o: o.llm
        )
        node_type = self.types[chosen]
        nodes = round(h.val(self.n[chosen]))
        spare = nodes * node_type.gpus * node_type.gpu_mib - sum(o.used_mib for o in options)
        return Choice(node_type, nodes, tuple(options), spare)


def solve(programme: Programme, excluded: frozenset[str], cuts: Sequence[Choice] = ()) -> Choice | None:
    """The best choice on the node types not excluded, avoiding every cut; None when there is none."""
    types = [t for t in programme.node_types if t.name not in excluded]
    if not types:
        return None
    return _Model(programme, types, cuts).solve()
