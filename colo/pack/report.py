"""`colo pack`'s answer as data (JSON) and as text: the layouts, what binds each, and why cheaper instance
types were passed over."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colo.pack.engine import ServerFigures
from colo.pack.explain import PackResult, Passed
from colo.pack.packings import Packing
from colo.pack.requirements import LlmNeed, PackRequest
from colo.pack.search import Layout
from colo.roles import Role


def _headroom(llm: LlmNeed, figures: ServerFigures) -> tuple[float, str]:
    """How far the LLM is above its tightest minimum (1.0 = exactly at it), and that minimum in words."""
    concurrency = figures.concurrency / llm.min_concurrency
    by_concurrency = (concurrency, f"minConcurrency {llm.min_concurrency:g}")
    if llm.min_kv_tokens is None:
        return by_concurrency
    tokens = figures.kv_tokens / llm.min_kv_tokens
    return min(by_concurrency, (tokens, f"minKvTokens {llm.min_kv_tokens}"))


def binds(request: PackRequest, layout: Layout) -> str:
    """The pair closest to one of its minimums: the one a smaller GPU or a longer context would break first."""
    scored = []
    for packing in layout.packings:
        llm = request.llms[packing.llm]
        ratio, minimum = _headroom(llm, packing.check.llm)
        scored.append((ratio, llm.name, minimum, packing))
    ratio, name, minimum, packing = min(scored, key=lambda s: s[0])
    figures = packing.check.llm
    return (
        f"{name}: {figures.concurrency:.2f} requests, {figures.kv_tokens} KV tokens ({ratio:.2f} x {minimum})"
    )


def _graphs(figures: ServerFigures, packing: Packing) -> str:
    if figures.role != Role.LLM or figures.graphs == "default":
        return figures.graphs
    sizes = packing.llm_server.get("cudagraphCaptureSizes")
    return f"sizes {sizes}" if figures.graphs == "sizes" and sizes else figures.graphs


def _server_rows(request: PackRequest, layout: Layout) -> list[dict[str, Any]]:
    rows = []
    for packing in layout.packings:
        llm = request.llms[packing.llm]
        placed = layout.check.pairs[llm.name]  # where the whole stack's plan put the pair
        for figures in packing.check.servers:
            if figures.role == Role.LLM:
                minimum = _headroom(llm, figures)[1]
            else:
                needs = request.embeddings if figures.role == Role.EMBEDDING else request.rerankers
                index = (
                    packing.companions.embedding
                    if figures.role == Role.EMBEDDING
                    else packing.companions.reranker
                )
                minimum = (
                    f"minConcurrency {needs[index or 0].min_concurrency:g}" if figures.has_kv_cache else "-"
                )
            rows.append(
                {
                    "pair": llm.name,
                    "role": figures.role,
                    "model": figures.model,
                    "node": placed.node,
                    "gpu": placed.node_gpus[figures.gpu or 0],
                    "gpus": list(placed.node_gpus)
                    if figures.gpu is None
                    else [placed.node_gpus[figures.gpu]],
                    "tensor_parallel_size": packing.gpus,
                    "kv_tokens": figures.kv_tokens,
                    "concurrency": round(figures.concurrency, 2),
                    "minimum": minimum,
                    "graphs": _graphs(figures, packing),
                }
            )
    return rows


def layout_view(request: PackRequest, layout: Layout) -> dict[str, Any]:
    instance, price = layout.candidate.instance, layout.candidate.price
    return {
        "usd_per_hour": round(layout.usd_per_hour, 4),
        "instance_type": instance.name,
        "nodes": layout.nodes,
        "gpu": instance.gpu,
        "gpus": layout.gpus,
        "idle_gpus": layout.gpus - sum(p.gpus for p in layout.packings),
        "spare_mib": layout.spare_mib,
        "price": {"usd_per_hour": price.usd_per_hour, "source": price.source, "date": price.date},
        "binds": binds(request, layout),
        "servers": _server_rows(request, layout),
    }


def _passed_view(passed: Passed) -> dict[str, Any]:
    return {
        "instance_type": passed.instance,
        "usd_per_hour": round(passed.usd_per_hour, 4),
        "reason": passed.reason,
    }


def pack_view(result: PackResult) -> dict[str, Any]:
    request = result.request
    return {
        "region": request.region,
        "origin": request.origin,
        "layouts": [layout_view(request, layout) for layout in result.layouts],
        "passed_over": [_passed_view(p) for p in result.passed],
        "current": _passed_view(result.current) if result.current else None,
        "notes": list(result.notes),
        "evaluations": result.evaluations,
        "seconds": round(result.seconds, 2),
    }


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def _summary(views: Sequence[dict[str, Any]]) -> list[str]:
    rows = [
        [
            str(rank),
            f"{v['usd_per_hour']:.3f}",
            f"{v['nodes']} x {v['instance_type']}",
            f"{v['gpus']} x {v['gpu']}",
            str(v["idle_gpus"]),
            v["binds"],
        ]
        for rank, v in enumerate(views, start=1)
    ]
    return _table(["#", "$/h", "instances", "GPUs", "idle GPUs", "binds (closest to a minimum)"], rows)


def _detail(rank: int, view: dict[str, Any]) -> list[str]:
    rows = [
        [
            s["pair"],
            s["role"],
            s["model"],
            f"{s['node']}/{s['gpus'][0]}"
            + (f"-{s['gpus'][-1]} (TP {len(s['gpus'])})" if len(s["gpus"]) > 1 else ""),
            str(s["kv_tokens"]),
            f"{s['concurrency']:.2f}",
            s["minimum"],
            s["graphs"],
        ]
        for s in view["servers"]
    ]
    head = f"layout {rank}: {view['nodes']} x {view['instance_type']} at ${view['price']['usd_per_hour']:g}/h each"
    headers = ["pair", "server", "model", "node/GPU", "KV tokens", "concurrency", "minimum", "CUDA graphs"]
    return ["", head, *_table(headers, rows)]


def _short(reason: str) -> str:
    """A refusal's first sentence, without the plan's bracketed breakdown."""
    return reason.split(" [", 1)[0]


def _passed_lines(passed: Sequence[Passed]) -> list[str]:
    groups: dict[str, list[Passed]] = {}
    for p in passed:
        groups.setdefault(_short(p.reason), []).append(p)
    lines = []
    for reason, members in groups.items():
        names = ", ".join(p.instance for p in members)
        cheapest = min(p.usd_per_hour for p in members)
        price = f" (from ${cheapest:.3f}/h)" if cheapest > 0 else ""
        lines.append(f"- {names}{price}: {reason}")
    return lines


def _comparison(result: PackResult) -> list[str]:
    current, best = result.current, result.layouts[0]
    if current is None:
        return []
    if current.usd_per_hour <= 0:
        return ["", f"the stack's own layout ({current.instance}): {current.reason}"]
    saving = current.usd_per_hour - best.usd_per_hour
    verdict = "the same" if abs(saving) < 1e-6 else f"${abs(saving):.3f}/h {'less' if saving > 0 else 'more'}"
    lines = [
        "",
        f"the stack's own layout: {current.reason} at ${current.usd_per_hour:.3f}/h; the best is {verdict}",
    ]
    if saving > 1e-6:
        per_gpu = best.usd_per_hour / best.gpus
        lines.append(
            f"  cheaper because it buys {best.gpus} x {best.candidate.instance.gpu} at ${per_gpu:.3f} per GPU-hour "
            f"on {best.nodes} x {best.candidate.instance.name}, and every pair still meets its minimums (above)"
        )
    return lines


def render_text(result: PackResult) -> str:
    request = result.request
    views = [layout_view(request, layout) for layout in result.layouts]
    price = result.layouts[0].candidate.price
    lines = [
        f"colo pack: {len(request.llms)} LLMs from {request.origin}; on-demand prices in {request.region} "
        f"({price.date}); {result.evaluations} pairs planned in {result.seconds:.1f} s",
        "",
        *_summary(views),
    ]
    shown: list[list[dict[str, Any]]] = []
    for rank, view in enumerate(views, start=1):
        if view["servers"] in shown:  # a larger node of the same GPU: the same budgets
            same = shown.index(view["servers"]) + 1
            lines += [
                "",
                f"layout {rank}: {view['nodes']} x {view['instance_type']}: every server as in layout {same}",
            ]
            continue
        shown.append(view["servers"])
        lines += _detail(rank, view)
    if result.passed:
        lines += ["", "cheaper instance types passed over:", *_passed_lines(result.passed)]
    lines += _comparison(result)
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)
