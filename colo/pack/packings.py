"""Packings: one LLM with its companions on one GPU model, judged by the plan, with its minimums checked.

A packing is feasible when `colo plan` would accept the pair on that GPU (every startup check in start order
passes with the safety margin) and the servers meet their own minimums. When an LLM's minimum is missed only
because the plan kept CUDA graphs, the same pair is tried with fewer capture sizes, then eager, and the one
that meets it is written into the stack (`cudagraphCaptureSizes` / `enforceEager`), so the plan of the
written stack makes the same choice whatever the stack-wide floor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from colo.pack.engine import PairCheck, ServerFigures, check_pair, reduced_capture_sizes
from colo.pack.requirements import CompanionNeed, LlmNeed, PackRequest
from colo.roles import Role


@dataclass(frozen=True)
class Companions:
    embedding: int  # index into request.embeddings
    reranker: int | None  # index into request.rerankers


@dataclass(frozen=True)
class Packing:
    llm: int  # index into request.llms
    companions: Companions
    gpu: str
    llm_server: dict[str, Any]  # the LLM's values as the stack will carry them
    check: PairCheck


@dataclass(frozen=True)
class Refusal:
    llm: int
    companions: Companions
    gpu: str
    reason: str
    # The LLM itself falls short while its companions hold `companions_mib`: with companions that hold as
    # much or more it falls short too, since every figure of the last server grows with the memory it finds.
    llm_side: bool = False
    companions_mib: int = 0


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


def evaluate(request: PackRequest, index: int, companions: Companions, gpu: str) -> Packing | Refusal:
    """The pair on one GPU model, as the plan sizes it, against its minimums."""
    llm = request.llms[index]
    base = request.planning_base()
    check = check_pair(pair_values(request, llm, companions, llm.server), gpu, base)
    if not check.feasible:
        llm_side = bool(check.servers) and all(".llm" in p.path for p in check.problems)
        return Refusal(
            index, companions, gpu, _first_problem(llm, gpu, check), llm_side, check.companions_mib
        )
    missed = shortfall(request, llm, companions, check)
    if missed is None:
        return Packing(index, companions, gpu, llm.server, check)
    for variant in _graph_variants(llm.server, check.llm):
        tried = check_pair(pair_values(request, llm, companions, variant), gpu, base)
        if tried.feasible and shortfall(request, llm, companions, tried) is None:
            return Packing(index, companions, gpu, variant, tried)
    llm_missed = _llm_shortfall(llm, check.llm) is not None
    return Refusal(index, companions, gpu, missed, llm_missed, check.companions_mib)
