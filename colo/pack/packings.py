"""Packings: one LLM with its companions on one GPU model, judged by the plan, with its minimums checked.

A packing is feasible when `colo plan` would accept the pair on that GPU (every startup check in start order
passes with the safety margin) and the servers meet their own minimums. When an LLM's minimum is missed only
because the plan kept CUDA graphs, the same pair is tried with fewer capture sizes, then eager, and the one
that meets it is written into the stack (`cudagraphCaptureSizes` / `enforceEager`), so the plan of the
written stack makes the same choice whatever the stack-wide floor. When the LLM falls short on one GPU, it is
tried over 2, 4 and 8 GPUs of one node (`tensorParallelSize`, its companions spread over the same GPUs), as far
as a node of that GPU model reaches: the packing is the smallest group that meets its minimums.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from colo.pack.engine import PairCheck, ServerFigures, check_pair, reduced_capture_sizes
from colo.pack.requirements import CompanionNeed, LlmNeed, PackRequest
from colo.roles import Role


@dataclass(frozen=True)
class Companions:
    embedding: int  # index into request.embeddings
    reranker: int | None  # index into request.rerankers


GROUP_SIZES = (1, 2, 4, 8)  # the tensor-parallel sizes a stack accepts (colo.config.schema.GROUP_SIZES)


@dataclass(frozen=True)
class Packing:
    llm: int  # index into request.llms
    companions: Companions
    gpu: str
    llm_server: dict[str, Any]  # the LLM's values as the stack will carry them
    check: PairCheck
    narrower: str | None = None  # why the next smaller tensor-parallel group would not do

    @property
    def gpus(self) -> int:
        """The GPUs the pair takes: its LLM's tensor-parallel group."""
        return int(self.llm_server.get("tensorParallelSize", 1))


@dataclass(frozen=True)
class Refusal:
    llm: int
    companions: Companions
    gpu: str
    reason: str
    # The LLM itself falls short while its companions hold `companions_mib` on the fullest GPU of a group of
    # `size`: with companions that hold as much or more it falls short too, since every figure of the last
    # server grows with the memory it finds.
    llm_side: bool = False
    companions_mib: int = 0
    size: int = 1


def companion_options(request: PackRequest, llm: LlmNeed) -> list[Companions]:
    """The companions an LLM may run beside: the ones it names, else any listed (a reranker or none)."""
    embeddings = [i for i, e in enumerate(request.embeddings) if llm.embedding in (None, e.key)]
    rerankers: list[int | None] = [
        i for i, r in enumerate(request.rerankers) if llm.reranker in (None, r.key)
    ]
    if llm.reranker is None:
        rerankers.insert(0, None)
    return [Companions(e, r) for e in embeddings for r in rerankers]


def pair_values(
    request: PackRequest, llm: LlmNeed, companions: Companions, llm_server: dict[str, Any]
) -> dict[str, Any]:
    """The pair as a stack file's `colo:pairs[]` entry."""
    pair: dict[str, Any] = {
        "name": llm.name,
        Role.LLM.value: llm_server,
        Role.EMBEDDING.value: request.embeddings[companions.embedding].server,
    }
    if companions.reranker is not None:
        pair[Role.RERANKER.value] = request.rerankers[companions.reranker].server
    return pair


def _companion_shortfall(figures: ServerFigures, need: CompanionNeed) -> str | None:
    if not figures.has_kv_cache or figures.concurrency >= need.min_concurrency:
        return None
    return (
        f"{figures.model} ({need.source}): minConcurrency {need.min_concurrency:g}, but its KV cache holds "
        f"{figures.concurrency:.2f} requests"
    )


def _llm_shortfall(llm: LlmNeed, figures: ServerFigures) -> str | None:
    max_len = llm.server["maxModelLen"]
    if figures.concurrency < llm.min_concurrency:
        return (
            f"{llm.server['model']} ({llm.source}): minConcurrency {llm.min_concurrency:g}, but its KV cache holds "
            f"{figures.concurrency:.2f} requests of {max_len} tokens"
        )
    if llm.min_kv_tokens is not None and figures.kv_tokens < llm.min_kv_tokens:
        return f"{llm.server['model']} ({llm.source}): minKvTokens {llm.min_kv_tokens}, but its KV cache holds {figures.kv_tokens}"
    return None


def shortfall(request: PackRequest, llm: LlmNeed, companions: Companions, check: PairCheck) -> str | None:
    """Which minimum the planned pair misses, in words; None when it meets them all."""
    missed = _llm_shortfall(llm, check.llm)
    if missed is not None:
        return missed
    by_role = {s.role: s for s in check.servers}
    needs = [(Role.EMBEDDING, request.embeddings[companions.embedding])]
    if companions.reranker is not None:
        needs.append((Role.RERANKER, request.rerankers[companions.reranker]))
    for role, need in needs:
        missed = _companion_shortfall(by_role[role], need)
        if missed:
            return missed
    return None


def _graph_variants(llm_server: dict[str, Any], figures: ServerFigures) -> Iterator[dict[str, Any]]:
    """Fewer capture sizes, then eager: only for an LLM whose graph settings the user left to colo."""
    if "enforceEager" in llm_server or "cudagraphCaptureSizes" in llm_server:
        return
    if figures.graphs == "default":
        yield {**llm_server, "cudagraphCaptureSizes": reduced_capture_sizes(figures.max_num_seqs)}
    if figures.graphs != "eager":
        yield {**llm_server, "enforceEager": True}


def _first_problem(llm: LlmNeed, gpu: str, check: PairCheck) -> str:
    """The plan's first refusal, named by pair, GPU and key (the one-pair stack's own path says nothing)."""
    if not check.problems:
        return f"{llm.name} on {gpu}: the pair could not be sized"
    problem = check.problems[0]
    key = problem.path.split(".", 1)[1] if "." in problem.path else problem.path
    return f"{llm.name} on {gpu} ({key}): {problem.message}"


def group_sizes(llm: LlmNeed, widest: int) -> tuple[int, ...]:
    """The tensor-parallel sizes to try for an LLM: the one it sets, else every size a node of `widest` holds."""
    pinned = llm.server.get("tensorParallelSize")
    if pinned is not None:
        return (int(pinned),)
    return tuple(size for size in GROUP_SIZES if size <= widest)


def evaluate(
    request: PackRequest, index: int, companions: Companions, gpu: str, widest: int = 1
) -> Packing | Refusal:
    """The pair on one GPU model, as the plan sizes it, against its minimums: on one GPU, then, while the LLM
    falls short, over the GPUs of a larger group, up to the `widest` node of that GPU model."""
    llm = request.llms[index]
    sizes = group_sizes(llm, widest)
    refused: Refusal | None = None
    for size in sizes:
        grouped = size == 1 or "tensorParallelSize" in llm.server
        server = llm.server if grouped else {**llm.server, "tensorParallelSize": size}
        outcome = _evaluate_as(request, index, companions, gpu, server, size)
        if isinstance(outcome, Packing):
            return replace(outcome, narrower=refused.reason if refused else None)
        if not outcome.llm_side:
            return outcome
        refused = outcome
    assert refused is not None
    if len(sizes) > 1:
        tried = ", ".join(map(str, sizes))
        return replace(refused, reason=f"{refused.reason} (tried on {tried} GPUs of one node)")
    return refused


def _evaluate_as(
    request: PackRequest, index: int, companions: Companions, gpu: str, server: dict[str, Any], size: int
) -> Packing | Refusal:
    llm = request.llms[index]
    base = request.planning_base()
    check = check_pair(pair_values(request, llm, companions, server), gpu, base)
    if not check.feasible:
        llm_side = bool(check.servers) and all(".llm" in p.path for p in check.problems)
        return Refusal(
            index, companions, gpu, _first_problem(llm, gpu, check), llm_side, check.companions_mib, size
        )
    missed = shortfall(request, llm, companions, check)
    if missed is None:
        return Packing(index, companions, gpu, server, check)
    for variant in _graph_variants(server, check.llm):
        tried = check_pair(pair_values(request, llm, companions, variant), gpu, base)
        if tried.feasible and shortfall(request, llm, companions, tried) is None:
            return Packing(index, companions, gpu, variant, tried)
    llm_missed = _llm_shortfall(llm, check.llm) is not None
    return Refusal(index, companions, gpu, missed, llm_missed, check.companions_mib, size)
