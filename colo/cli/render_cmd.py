"""`colo render`: run the real program under Pulumi's mock runtime and write what it would deploy."""

from __future__ import annotations

import argparse
from pathlib import Path

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.cli.plan_cmd import build_plan
from colo.cli.progress import step
from colo.config import StackConfig
from colo.config.load import PROJECT
from colo.plan.budget_bars import svg_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="directory for manifests/ (the objects to kubectl apply) and the summaries: a new or empty "
        "one, or an earlier render; colo never deletes or overwrites files it did not write",
    )
    parser.add_argument(
        "--preview", action="store_true", help="run as `pulumi preview` would (the default is as `pulumi up`)"
    )


def pictures(config: StackConfig) -> dict[str, str]:
    """summary-gpu-<n>.svg: each GPU's budget as the program's plan sizes it (the same plan `colo plan` prints)."""
    plan = build_plan(config)
    return svg_files(plan, "summary-") if plan.feasible else {}


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    # colo's own program reads the `colo:` namespace and is refused here, before it serialises any of it; a
    # program of one's own (another project name, such as the examples) reads its own namespace, and
    # colo's components refuse what does not fit while it runs.
    config = load_config(stack_file) if stack_file.project == PROJECT else None
    # Imported only now, so that `colo plan` and a refused render never load Pulumi.
    from colo.components.errors import ProgramError
    from colo.mock_run import run_program
    from colo.output_dir import check_replaceable
    from colo.render import APPLY_DIR, write_render

    out: Path = args.out if args.cwd is None else args.cwd / args.out
    check_replaceable(out.resolve(), "--out")  # before the program runs: refuse early, write nothing
    try:
        with step("render", f"running the program of stack {stack_file.stack} under Pulumi's mock runtime"):
            program_run = run_program(stack_file, preview=args.preview)
    except ProgramError as exc:
        # The program refused the config or the plan before registering anything; nothing is written,
        # and colo.cli.main turns the original error into exit code 2 (config) or 1 (plan).
        raise exc.error from None
    rendered = write_render(program_run, stack_file.stack, out, pictures(config) if config else {})
    print(
        f"wrote {len(rendered.objects)} Kubernetes objects to {out / APPLY_DIR} and summary.md/summary.json "
        f"to {out}\napply them with: kubectl apply -f {out / APPLY_DIR}/"
    )
    if rendered.secrets:
        print(
            "secrets are never written to files; the pods read these by name and wait until they exist, so "
            "create each (the value from the variable):"
        )
        for secret in rendered.secrets:
            print(f"  {secret.command}")
    return ExitCode.OK
