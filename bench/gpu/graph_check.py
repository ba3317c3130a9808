"""Size every server of a GPU run with colo's estimator at the flags it ran with, beside what vLLM logged.

    python bench/gpu/graph_check.py bench/gpu/results/2026-12-02-h200-dense-logs.tar.gz [...] [--json OUT]
        [--gpu H100-SXM] [--release 0.22.0] [--torch 2.11.0+cu130]

The plans of a run derive each server's utilization from colo's figures of the day, so after a change to a
figure the plan no longer matches the run. This script reads each server's own arguments from its log
("non-default args"), sizes that process with `colo.vllm.estimate` on the run's GPU and release (FlashInfer
absent, as the runs had it) and sets the graph, activation and KV figures beside the log's. Nothing is
compared across runs: the figures are colo's for the flags vLLM really got.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench/gpu is not a package on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.gpu.log_figures import figures as log_figures
from colo.catalog import GIB
from colo.vllm import EstimateRequest, estimate

GPU = "H200"
RELEASE = "0.22.0"
TORCH = "2.11.0+cu130"  # the PyTorch the wheel set installs for 0.22.0 (README.md), whose non-torch state is measured
_ARGS = re.compile(r"non-default args: (\{.*\})")
_FREE = re.compile(r"worker init memory snapshot: .*?free_memory=([\d.]+)GiB")


def server_arguments(text: str) -> dict[str, Any]:
    """The `non-default args` dict vLLM's API server prints first."""
    match = _ARGS.search(text)
    if match is None:
        raise ValueError("no 'non-default args' line")
    parsed = ast.literal_eval(match.group(1))
    if not isinstance(parsed, dict):
        raise ValueError("'non-default args' is not a dict")
    return parsed


def request_for(
    text: str, *, gpu: str = GPU, release: str = RELEASE, torch: str | None = TORCH
) -> EstimateRequest:
    args = server_arguments(text)
    return EstimateRequest(
        model=str(args["model"]),
        vllm_version=release,
        gpu=gpu,
        gpu_memory_utilization=args.get("gpu_memory_utilization"),
        max_model_len=args.get("max_model_len"),
        max_num_seqs=args.get("max_num_seqs"),
        max_num_batched_tokens=args.get("max_num_batched_tokens"),
        enforce_eager=bool(args.get("enforce_eager")),
        pooling=args.get("runner") == "pooling",
        flashinfer_installed=False,  # the runs set VLLM_USE_FLASHINFER_SAMPLER=0 and carried no FlashInfer
        torch_release=torch,
    )


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def check(
    name: str, text: str, *, gpu: str = GPU, release: str = RELEASE, torch: str | None = TORCH
) -> dict[str, Any]:
    logged = log_figures(text)
    result = estimate(request_for(text, gpu=gpu, release=release, torch=torch))
    b = result.budget
    kv_logged = logged.get("kv_pool_gib")
    return {
        "server": name,
        "runner": "V2" if b.spec.v2_model_runner else "V1",
        "graphs": {"colo": b.graphs.count, "log": logged.get("graphs")},
        "graph_estimate_gib": {
            "colo": _gib(b.graphs.estimate_bytes),
            "log": logged.get("graph_estimate_gib"),
        },
        "graph_captured_gib": {"colo": _gib(b.graphs.bytes), "log": logged.get("graph_captured_gib")},
        "estimate_in_budget": b.graph_estimate_in_budget,
        "activation_gib": {"colo": _gib(b.activation_bytes), "log": logged.get("profile_activation_gib")},
        "non_torch_gib": {"colo": _gib(b.non_torch_bytes), "log": logged.get("profile_non_torch_gib")},
        "kv_pool_gib": {"colo": _gib(b.kv_bytes), "log": kv_logged},
        "kv_tokens": {"colo": b.capacity.tokens if b.capacity else 0, "log": logged.get("kv_tokens")},
    }


def servers(archives: list[Path]) -> list[tuple[str, str]]:
    found = []
    for archive in archives:
        with tarfile.open(archive) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if not member.name.endswith(".log"):
                    continue
                handle = tar.extractfile(member)
                text = handle.read().decode(errors="replace") if handle else ""
                if "Available KV cache memory" in text or "Graph capturing finished" in text:
                    found.append((Path(member.name).stem, text.replace("\r", "\n")))
    return found


def _cell(pair: dict[str, Any]) -> str:
    return f"{pair['colo']} / {pair['log'] if pair['log'] is not None else '-'}"


def table(rows: list[dict[str, Any]]) -> str:
    keys = (
        "graphs",
        "graph_estimate_gib",
        "graph_captured_gib",
        "activation_gib",
        "non_torch_gib",
        "kv_pool_gib",
    )
    lines = [
        "| server (runner) | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for row in rows:
        cells = " | ".join(_cell(row[key]) for key in keys)
        lines.append(f"| {row['server']} ({row['runner']}) | {cells} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("archives", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--gpu", default=GPU, help=f"the run's GPU as colo's catalog names it ({GPU})")
    parser.add_argument("--release", default=RELEASE, help=f"the vLLM release the run installed ({RELEASE})")
    parser.add_argument("--torch", default=TORCH, help=f"the PyTorch build the run installed ({TORCH})")
    args = parser.parse_args()
    rows = [
        check(name, text, gpu=args.gpu, release=args.release, torch=args.torch)
        for name, text in servers(args.archives)
    ]
    print("each cell: colo / vLLM's log")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
