"""`colo render`: run the real program under Pulumi's mock runtime and write what it would deploy."""

from __future__ import annotations

import argparse
from pathlib import Path

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="directory for the YAML files and summary")
    parser.add_argument(
        "--preview", action="store_true", help="run as `pulumi preview` would (the default is as `pulumi up`)"
    )


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    load_config(stack_file)  # refused here, before the program serialises any of it
    # Imported only now, so that `colo plan` and a refused render never load Pulumi.
    from colo.components.errors import ProgramError
    from colo.mock_run import run_program
    from colo.render import write_render

    try:
        program_run = run_program(stack_file, preview=args.preview)
    except ProgramError as exc:
        # The program refused the config or the plan before registering anything; nothing is written,
        # and colo.cli.main turns the original error into exit code 2 (config) or 1 (plan).
        raise exc.error from None
    written = write_render(program_run, stack_file.stack, args.out)
    print(f"wrote {len(written) - 2} Kubernetes objects and summary.md/summary.json to {args.out}")
    return ExitCode.OK
