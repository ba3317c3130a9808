"""`colo preflight`: check, with boto3, the AWS side a stack needs before `pulumi up`."""

from __future__ import annotations

import argparse

from colo.aws.clients import RegionMissing
from colo.aws.preflight import Check, run_checks
from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.errors import ConfigError, Problem
from colo.plan.stack import make_plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument("--region", help="AWS region; default: the stack's aws:region, then AWS_REGION")


def render(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"{'✓' if check.ok else '✗'} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            lines.append(f"    fix: {check.fix}")
    failed = sum(not c.ok for c in checks)
    lines.append(f"{len(checks) - failed} passed, {failed} failed")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    config = load_config(stack_file)
    region = args.region or config.aws_region
    # The GPU and GPUs per node the budget uses; model profiles are not read here (checked below).
    plan = make_plan(config)
    try:
        checks = run_checks(config, plan.gpu, plan.gpus_per_node, region=region)
    except RegionMissing as exc:
        raise ConfigError([Problem("aws:region", str(exc))]) from None
    print(render(checks))
    return ExitCode.OK if all(c.ok for c in checks) else ExitCode.FAILS
