"""`colo estimate`'s output: a verdict first, then the budget as a table and a bar (or the JSON view, with the
same verdict). Fix texts the memory model words with stack keys are shown as the flags the user typed."""

from __future__ import annotations

from typing import Any

from colo.catalog import MIB
from colo.cli.flag_names import as_flags
from colo.plan.budget_bars import process_bar
from colo.plan.picture import GpuBar, hundredths_of_gib, terminal_lines
from colo.vllm import Estimate, ProcessBudget, assumed_rules_warning, estimate_view

PART_LABELS = {
    "context": "CUDA context",
    "weights": "weights",
    "activation": "activation peak",
    "graphs": "CUDA graphs (held once serving)",
    "non_torch": "non-torch memory",
    "kv": "KV cache",
    "other": "held beyond these after startup",
}


def reasons(result: Estimate) -> list[str]:
    """Why the process would not start (empty when it starts), in the flags' words."""
    budgets = result.stages or (result.budget,)
    found: list[str] = []
    for budget in budgets:
        if not budget.startup.ok and budget.startup.message:
            found.append(budget.startup.message)
        found += list(budget.errors)
    return [as_flags(text) for text in dict.fromkeys(found)]


def verdict_line(result: Estimate) -> str:
    budget = result.budget
    if not result.ok:
        return f"DOES NOT START: {'; '.join(reasons(result))}"
    if budget.capacity is None:
        return "starts: a pooling model holds no KV cache to speak of"
    capacity = budget.capacity
    return (
        f"starts: KV cache {budget.kv_bytes / 2**30:.2f} GiB = {capacity.tokens:,} tokens, room for "
        f"{capacity.max_concurrency:.2f} requests of {budget.spec.limits.max_model_len:,} tokens at once"
    )


def context_parts(budget: ProcessBudget) -> dict[str, int]:
    """What the budget's CUDA context holds, in MiB: the GPU's own context (the catalog's context_mib), the
    cuBLAS handles a release creates before its memory snapshot (0.33+), tensor-parallel buffers created
    before it; they add up to context_gib, which is why it is larger than gpu_detail.context_mib."""
    spec = budget.spec
    gpu_context = spec.gpu.context_bytes
    cublas = spec.gpu.cublas_bytes if spec.rules.cublas_in_baseline else 0
    communication = budget.communication.before_snapshot
    parts = {
        "gpu_context_mib": gpu_context,
        "cublas_before_snapshot_mib": cublas,
        "tp_communication_before_snapshot_mib": communication,
    }
    rest = budget.context_bytes - gpu_context - cublas - communication
    if rest:
        parts["other_before_snapshot_mib"] = rest
    return {key: round(value / MIB) for key, value in parts.items()}


def json_view(result: Estimate) -> dict[str, Any]:
    view = estimate_view(result)
    view["ok"] = result.ok
    view["verdict"] = "starts" if result.ok else "fails"
    view["reasons"] = reasons(result)
    view["errors"] = [as_flags(text) for text in view["errors"]]
    if "rules_assumed" in view:
        view["rules_assumed"] = as_flags(view["rules_assumed"])
    view["context_parts"] = context_parts(result.budget)
    return view


def _context_note(budget: ProcessBudget) -> str:
    parts = context_parts(budget)
    named = {
        "gpu_context_mib": "the GPU's context",
        "cublas_before_snapshot_mib": "cuBLAS handles created before vLLM's memory snapshot",
        "tp_communication_before_snapshot_mib": "tensor-parallel buffers created before it",
        "other_before_snapshot_mib": "other memory held before it",
    }
    return " + ".join(f"{named[key]} {value} MiB" for key, value in parts.items() if value)


def _graphs_note(budget: ProcessBudget) -> str:
    graphs = budget.graphs
    if not graphs.count:
        return "none captured"
    if budget.measured is not None:
        return f"{graphs.count} graphs, captured before the KV cache is sized (measured, not estimated)"
    taken = "taken off the KV pool" if budget.graph_estimate_in_budget else "not taken off the KV pool"
    return f"{graphs.count} graphs; vLLM's estimate {graphs.estimate_bytes / 2**30:.2f} GiB {taken}"


def _kv_note(budget: ProcessBudget) -> str:
    if budget.capacity is None:
        return ""
    blocks = f"{budget.capacity.num_blocks:,} blocks"
    if budget.measured is None:
        return blocks
    side = "the free memory" if budget.measured.bound == "free" else "the requested memory"
    return f"{blocks}, sized after warm-up from {side} (vLLM's extensible KV cache)"


def _memory_rows(budget: ProcessBudget) -> list[tuple[str, str, str]]:
    bar, _ = process_bar("process", budget)
    figures = hundredths_of_gib([segment.bytes for segment in bar.segments])
    notes = {
        "context": _context_note(budget),
        "graphs": _graphs_note(budget),
        "kv": _kv_note(budget),
    }
    if budget.measured is not None:
        notes["activation"] = "the transient vLLM keeps free after warm-up, and what stays allocated"
    rows = [
        (PART_LABELS[segment.kind], figure, notes.get(segment.kind, ""))
        for segment, figure in zip(bar.segments, figures, strict=True)
    ]
    return [*rows, ("= footprint (nvidia-smi)", f"{bar.bytes / 2**30:.2f}", "")]


def _table(rows: list[tuple[str, str, str]]) -> list[str]:
    label_width = max(len(label) for label, _, _ in rows)
    figure_width = max(len(figure) for _, figure, _ in rows)
    return [
        f"  {label.ljust(label_width)}  {figure.rjust(figure_width)}  {note}".rstrip()
        for label, figure, note in rows
    ]


def _source(result: Estimate) -> str:
    if result.hub is not None:
        return f"read from the Hub: {result.hub.repo_id} at commit {result.hub.commit}"
    return {"catalog": "colo's model catalog", "file": "a local config.json"}.get(
        result.source, result.source
    )


def _stage_lines(result: Estimate) -> list[str]:
    if not result.stages:
        return []
    lines = [f"pipeline: {len(result.stages)} stages; the figures above are stage {result.binding_stage}'s"]
    for budget in result.stages:
        stage = budget.spec.stage
        assert stage is not None
        blocks = budget.capacity.num_blocks if budget.capacity else 0
        state = "ok" if budget.ok else "FAILS"
        lines.append(
            f"  stage {stage.rank}: layers {stage.start}-{stage.end - 1}, weights "
            f"{budget.weights_bytes / 2**30:.2f} GiB, KV {blocks:,} blocks, {state}"
        )
    return lines


def _release(result: Estimate) -> str:
    """The release asked for, and the one whose rules sized it where they differ (--assume-rules-of)."""
    own = result.budget.spec.vllm_version
    return own if result.assumed_for is None else f"{result.assumed_for}, sized with {own}'s rules"


def text(result: Estimate, width: int, unicode: bool) -> str:
    budget, spec = result.budget, result.budget.spec
    limits = spec.limits
    total_gib = spec.gpu.cuda_total_bytes / 2**30
    lines = [
        f"{result.arch.model_id} ({_source(result)}) on {result.gpu.name}, {total_gib:.2f} GiB as CUDA reports "
        f"it; vLLM {_release(result)}",
        f"verdict: {verdict_line(result)}",
        "",
        f"utilization {spec.utilization} x {total_gib:.2f} GiB = requested {budget.requested_bytes / 2**30:.2f} "
        f"GiB; free at startup {budget.startup.free_bytes / 2**30:.2f} GiB: "
        f"{'ok' if budget.startup.ok else 'NOT ENOUGH'}",
        f"limits: --max-model-len {limits.max_model_len}, --max-num-seqs {limits.max_num_seqs}, "
        f"--max-num-batched-tokens {limits.max_num_batched_tokens}; dtype {spec.arch.dtype}; tensor parallel "
        f"{spec.tensor_parallel_size}",
        "",
        "memory, GiB (the parts add up to the footprint):",
        *_table(_memory_rows(budget)),
    ]
    if result.assumed_for is not None:
        lines += ["", f"WARNING: {as_flags(assumed_rules_warning(result.assumed_for, spec.vllm_version))}"]
    lines += [f"note (GPU): {assumption}" for assumption in result.gpu.assumptions]
    lines += _stage_lines(result)
    bar, notes = process_bar(result.arch.model_id, budget)
    picture = GpuBar(f"{result.gpu.name}", spec.gpu.cuda_total_bytes, (bar,), 0, tuple(notes))
    lines += ["", *terminal_lines(picture, width, unicode=unicode)]
    return "\n".join(lines)
