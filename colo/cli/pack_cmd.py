"""`colo pack`: from a list of models (or an existing stack) to the cheapest stack that fits."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.config.schema import Cluster, NodePool, NodePoolMode
from colo.errors import ArgumentsError, InfeasiblePlanError, Problem
from colo.pack.engine import check_stack
from colo.pack.explain import pack
from colo.pack.report import pack_view, render_text
from colo.pack.requirements import PackRequest, load_pack_file, request_from_stack
from colo.pack.stackfile import ensure_writable, stack_text, write_stack
from colo.plan.capacity import mode_problems
from colo.stackfiles import load_stack_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = add_stack_arguments(parser)
    group.add_argument(
        "--models",
        type=Path,
        help="a models file: the LLMs with their minimums, the embedding and reranker models",
    )
    parser.add_argument(
        "--region", help="price the instance types of this region (default: the file's or stack's)"
    )
    parser.add_argument(
        "--families",
        help="comma-separated instance families to search, e.g. g6e,g7e (default: every priced one)",
    )
    parser.add_argument("--alternatives", type=int, default=3, help="how many layouts to show after the best")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--write", type=Path, help="write the best layout as a stack file, e.g. stacks/Pulumi.packed.yaml"
    )
    parser.add_argument(
        "--node-pool-mode",
        choices=get_args(NodePoolMode),
        help="the written stack's nodePool.mode: karpenter or auto write a stack whose GPU nodes Karpenter or "
        "EKS Auto Mode launch (docs/capacity.md); default: the stack's or models file's",
    )


def _request(args: argparse.Namespace) -> PackRequest:
    if args.models is not None:
        request = load_pack_file(args.models)
    else:
        stack_file = read_stack_file(args)
        request = request_from_stack(load_config(stack_file), f"stack {stack_file.stack}")
    if args.region:
        request = replace(request, region=args.region)
    if args.families:
        request = replace(request, families=tuple(f.strip() for f in args.families.split(",") if f.strip()))
    if args.node_pool_mode:
        request = _with_node_pool_mode(request, args.node_pool_mode)
    return request


def _with_node_pool_mode(request: PackRequest, mode: str) -> PackRequest:
    """The request with the written stack's nodePool.mode set, refused now (before the search) where the stack's
    cluster and pool settings rule that mode out."""
    flag = "--node-pool-mode"
    pool_values = {**request.base.get("nodePool", {}), "mode": mode}
    cluster_values = request.base.get("cluster", {})
    try:
        cluster, pool = Cluster.model_validate(cluster_values), NodePool.model_validate(pool_values)
    except ValidationError as exc:
        problems = [Problem(flag, f"{mode}: {error['msg']}") for error in exc.errors()]
        raise ArgumentsError(problems) from None
    problems = [Problem(flag, f"{mode}: {p.path}: {p.message}") for p in mode_problems(cluster, pool)]
    if mode != "existing" and "name" not in cluster.model_fields_set:
        problems.append(
            Problem(
                flag,
                f"{mode} needs the EKS cluster's name: give cluster.name under `stack:` in the models file (or in "
                "the stack packed)",
            )
        )
    if problems:
        raise ArgumentsError(problems)
    return replace(request, base={**request.base, "nodePool": pool_values})


def _write(path: Path, text: str, region: str) -> None:
    """Write the stack, then read it back as `colo plan` reads a stack file and plan it once more."""
    write_stack(path, text)
    written = load_stack_file(path)
    check = check_stack(written.values, region)
    if not check.feasible:  # pack planned these very values; a refusal here is a bug, not a user error
        raise InfeasiblePlanError(list(check.problems))


def run(args: argparse.Namespace) -> int:
    if args.write is not None:
        ensure_writable(args.write)  # before the search, so a refusal costs nothing
    request = _request(args)
    result = pack(request, max(args.alternatives, 0))
    if args.format == "json":
        print(json.dumps(pack_view(result), indent=2, sort_keys=True))
    else:
        print(render_text(result))
    if args.write is not None:
        _write(args.write, stack_text(result.layouts[0], request.region, request.origin), request.region)
        if args.format != "json":
            print(f"\nwrote {args.write}: `colo plan --config {args.write}` plans it as shown")
    return ExitCode.OK
