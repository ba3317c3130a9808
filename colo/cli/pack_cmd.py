"""`colo pack`: from a list of models (or an existing stack) to the cheapest stack that fits."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.cli.progress import step
from colo.errors import InfeasiblePlanError
from colo.pack.engine import check_stack
from colo.pack.explain import pack
from colo.pack.report import pack_view, render_text
from colo.pack.requirements import PackRequest, load_pack_file, request_from_stack
from colo.pack.stackfile import ensure_writable, stack_text, write_stack
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
    parser.add_argument(
        "--format", choices=("table", "json"), default="table", help="table (default) or json, for tools"
    )
    parser.add_argument(
        "--write", type=Path, help="write the best layout as a stack file, e.g. stacks/Pulumi.packed.yaml"
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
    return request


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
    with step("pack", "planning every model on every priced instance type"):
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
