"""`colo` command line: plan, estimate, render, diff, preflight, pack. Each command lives in its own module."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from colo.cli.common import ExitCode
from colo.errors import ColoError, ConfigError, UsageError

# name -> (module, one-line help); modules are imported only when their command runs.
COMMANDS = {
    "plan": ("colo.cli.plan_cmd", "size every pair on its GPU and show the budget, flags and probes"),
    "estimate": ("colo.cli.estimate_cmd", "size one vLLM process the way vLLM would"),
    "render": (
        "colo.cli.render_cmd",
        "run the program under Pulumi's mock runtime and write its Kubernetes YAML",
    ),
    "diff": ("colo.cli.diff_cmd", "compare the plan and manifests of two configs, as markdown for a PR"),
    "verify": (
        "colo.cli.verify_cmd",
        "hold the plan against what each vLLM server reported at startup (logs, /metrics)",
    ),
    "preflight": (
        "colo.cli.preflight_cmd",
        "check the AWS side (cluster, instance type, S3 models) with boto3",
    ),
    "pack": (
        "colo.cli.pack_cmd",
        "find the cheapest instance type and pairing that hold a list of models (or a stack's pairs)",
    ),
    "schema": ("colo.cli.schema_cmd", "print the stack file's JSON Schema, for editors and other tools"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Only the chosen command's module is imported, so `colo plan` never loads boto3 or Pulumi."""
    parser = argparse.ArgumentParser(prog="colo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(sub_parser)
            sub_parser.set_defaults(run=module.run)
    return parser


def console() -> int:
    """The `colo` command: `colo plan | head` ends quietly, like other command-line tools. Only the process's
    own entry point may change the SIGPIPE disposition; a program calling main() keeps its own."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    try:
        code: int = args.run(args)
    except (ConfigError, UsageError) as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode.INVALID
    except ColoError as exc:
        print(exc.render(), file=sys.stderr)
        return ExitCode.FAILS
    return code
