"""`colo plan`: every pair's budget per GPU, the startup checks in order, the flags and the probe budgets."""

from __future__ import annotations

import argparse
import json
from typing import Any

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.cli.terminal import terminal_width, unicode_output
from colo.config import StackConfig
from colo.plan.budget_bars import PairPicture, pair_picture
from colo.plan.compile_cache import FIRST_START
from colo.plan.picture import GIB, PROCESS_KINDS, ProcessBar, hundredths_of_gib, terminal_lines
from colo.plan.report import plan_view
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader

# The memory columns are the parts of each process's footprint (colo.plan.budget_bars), in GiB, so that a row
# adds up to its footprint; the rest come from the plan's JSON view.
MEMORY_HEADERS = [
    "context GiB",
    "weights GiB",
    "activ GiB",
    "graphs GiB",
    "non-torch GiB",
    "KV GiB",
    "after-start GiB",
]
assert len(MEMORY_HEADERS) == len(PROCESS_KINDS)
HEADERS = [
    "server",
    "model",
    "util",
    *MEMORY_HEADERS,
    "= footprint GiB",
    "KV tokens",
    "concurrency",
    "startup probe s",
]
COLUMNS_NOTE = (
    "the GiB columns add up to each footprint as nvidia-smi will show it: CUDA context, weights, activation "
    "peak, CUDA graphs as held once serving, non-torch memory, KV cache, and what it holds beyond them after "
    "startup (warm-up leftovers, buffers outside vLLM's budget)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table: for a terminal, with a bar per GPU (default); markdown: for a PR; json: for tools",
    )


def build_plan(config: StackConfig) -> Plan:
    return make_plan(config, s3_profile=s3_profile_reader(config))


def _rows(pair: dict[str, Any], processes: tuple[ProcessBar, ...]) -> list[list[str]]:
    rows = []
    for server, process in zip(pair["servers"], processes, strict=True):
        memory = hundredths_of_gib([segment.bytes for segment in process.segments])
        rows.append(
            [
                server["name"],
                server["model"],
                str(server["memory"]["gpu_memory_utilization"]),
                *memory,
                f"{process.bytes / GIB:.2f}",
                str(server["memory"]["kv_tokens"]),
                str(server["memory"]["max_concurrency"]),
                str(server["startup_probe_seconds"]),
            ]
        )
    return rows


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def _markdown(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _headline(view: dict[str, Any], title: str) -> str:
    pool = view["node_pool"]
    nodes = (
        f"of {pool['instance_type']} x {pool['gpus_per_node']} GPU"
        if pool["instance_type"] is not None
        else f"x {pool['gpus_per_node']} GPU (no instance type named)"
    )
    return (
        f"{title}GPU {view['gpu']['name']} ({view['gpu']['cuda_total_gib']} GiB as CUDA reports it); "
        f"{pool['node_count']} node(s) {nodes}; "
        f"pairing {view['gpu_pairing']}; ordered start by {view['ordered_start']}"
    )


def _capacity_lines(view: dict[str, Any]) -> list[str]:
    """What Karpenter or EKS Auto Mode will launch for the stack (nodePool.mode karpenter or auto)."""
    capacity = view["node_pool"].get("capacity")
    if capacity is None:
        return []
    who = "EKS Auto Mode" if capacity["mode"] == "auto" else f"Karpenter {capacity['karpenter']}"
    ref = capacity["node_class"]
    lines = [
        f"{who} launches NodePool {capacity['node_pool']}: one of {', '.join(capacity['instance_types'])} "
        f"({capacity['gpus_per_node']} x {capacity['gpu']} each), on demand, at most {capacity['max_nodes']} "
        f"node(s) / {capacity['max_gpus']} GPUs; {ref['kind']} {ref['name']}, "
        f"{capacity['disk_gib']} GiB for images and weights"
    ]
    if capacity["ami_alias"] is not None:
        lines.append(
            f"EC2NodeClass {ref['name']}: AMI alias {capacity['ami_alias']}, node role {capacity['node_role']}"
        )
    return lines


def _pair_lines(pair: dict[str, Any], picture: PairPicture, markdown: bool, width: int | None) -> list[str]:
    """One pair: its verdict, its servers' budgets, the startup checks, notes and `vllm serve` lines."""
    group = pair["group"]
    lines = ["", _pair_headline(pair, markdown), ""]
    lines += (_markdown if markdown else _table)(HEADERS, _rows(pair, picture.processes))
    lines += ["", COLUMNS_NOTE, ""]
    if width is not None:
        for bar in picture.gpus:
            lines += [*terminal_lines(bar, width, unicode=unicode_output()), ""]
    checks = ", ".join(
        f"{c['server']}: free {c['free_gib']} GiB >= requested {c['requested_gib']} GiB "
        f"{'ok' if c['ok'] else 'FAILS'}"
        for c in pair["startup_checks"]
    )
    lines.append(f"startup checks in order: {checks}")
    if group:
        lines += _group_lines(group)
    if pair.get("compute_sharing"):
        lines += pair["compute_sharing"]["lines"]
    for server in pair["servers"]:
        lines += _server_lines(server)
    if any(server["compile_cache"] for server in pair["servers"]):
        lines.append(f"note: {FIRST_START}")
    return lines


def _server_lines(server: dict[str, Any]) -> list[str]:
    """Where its model was read, its notes, its compile cache, its calibration and its `vllm serve` line."""
    name, lines = server["name"], []
    if (source := server["model_source"])["kind"] == "hub":
        pin = f"revision {source['revision']}" if source["revision"] else "main, unpinned"
        lines.append(f"read from the Hub ({name}): {source['repo_id']} at commit {source['commit']} ({pin})")
    lines += [f"note ({name}): {note}" for note in server["memory"]["notes"]]
    if server["compile_cache"]:
        lines.append(f"compile cache ({name}): {server['compile_cache']['where']}")
    if server["memory"]["calibration"]:
        lines.append(f"calibrated ({name}): {_calibration_text(server['memory']['calibration'])}")
    lines.append(f"{name} ({server['image']}): vllm serve {json.dumps(server['vllm_args'])}")
    return lines


def _pair_headline(pair: dict[str, Any], markdown: bool) -> str:
    """Where the pair runs (a tensor-parallel pair: its GPUs), its verdict and nvidia-smi's used and free."""
    verdict = "fits" if pair["feasible"] else "DOES NOT FIT"
    head = "### " if markdown else ""
    group = pair["group"]
    where = f"GPU {pair['gpu']}"
    if group:
        where = f"GPUs {pair['gpus'][0]}-{pair['gpus'][-1]} (tensor parallel {group['tensor_parallel_size']})"
    fullest = " on the fullest GPU" if group else ""
    return (
        f"{head}pair {pair['name']} -> node {pair['node']} {where}: {verdict}; predicted "
        f"nvidia-smi used {pair['predicted_used_mib']} MiB, free {pair['predicted_free_mib']} MiB{fullest} "
        f"(safety margin {pair['safety_margin_mib']} MiB)"
    )


def _group_lines(group: dict[str, Any]) -> list[str]:
    """Every GPU of a tensor-parallel LLM's group: what runs there, each server's startup check, what is left."""
    lines = []
    for gpu in group["gpus"]:
        servers = ", ".join(
            f"{s['name']} {s['footprint_mib']} MiB (util {s['gpu_memory_utilization']}, free {s['startup_free_gib']} "
            f"GiB >= requested {s['requested_gib']} GiB {'ok' if s['startup_ok'] else 'FAILS'}"
            + (
                f", KV {s['kv_cache_gib']} GiB in {s['num_gpu_blocks']} blocks)"
                if s["num_gpu_blocks"]
                else ")"
            )
            for s in gpu["servers"]
        )
        idle = f", idle {gpu['idle_mib']} MiB" if gpu["idle_mib"] else ""
        sizes = " (its rank sizes the LLM)" if gpu["gpu"] == group["binding_gpu"] else ""
        lines.append(
            f"GPU {gpu['gpu']} of the group (node GPU {gpu['node_gpu']}){sizes}: {servers}; used "
            f"{gpu['predicted_used_mib']} MiB, free {gpu['predicted_free_mib']} MiB{idle}"
        )
    lines += [f"note (group): {note}" for note in group["notes"]]
    return lines


def _calibration_text(view: dict[str, Any]) -> str:
    """Which budget inputs come from an observed startup instead of the catalog, and from where."""
    figures = ", ".join(
        f"{name} {value['calibrated']} (catalog {value['catalog']})"
        for name, value in view["figures"].items()
    )
    return f"{figures}; from {view['file']} ({view['gpu']}, vLLM {view['vllm_version']}): observed {view['observed']}"


def _findings(heading: str, findings: list[dict[str, str]]) -> list[str]:
    if not findings:
        return []
    return ["", heading, *(f"- {f['path']}: {f['message']}" for f in findings)]


def render_text(
    view: dict[str, Any], pictures: list[PairPicture], markdown: bool, width: int | None = None
) -> str:
    """The plan as text; `width`: draw each GPU's budget as a bar that wide (the terminal's, for a table)."""
    title = "## " if markdown else ""
    lines = [_headline(view, title), *_capacity_lines(view)]
    lines += [f"note (GPU): {assumption}" for assumption in view["gpu"]["assumptions"]]
    for pair, picture in zip(view["pairs"], pictures, strict=True):
        lines += _pair_lines(pair, picture, markdown, width)
    lines += _findings(f"{title}Warnings" if markdown else "WARNINGS:", view["warnings"])
    lines += _findings(f"{title}Problems" if markdown else "PROBLEMS:", view["problems"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    config = load_config(read_stack_file(args))
    plan = build_plan(config)
    view = plan_view(plan)
    if args.format == "json":
        print(json.dumps(view, indent=2, sort_keys=True))
    else:
        markdown = args.format == "markdown"
        pictures = [pair_picture(pair) for pair in plan.pairs]
        print(render_text(view, pictures, markdown=markdown, width=None if markdown else terminal_width()))
    return ExitCode.OK if plan.feasible else ExitCode.FAILS
