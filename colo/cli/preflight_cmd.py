"""`colo preflight`: check, with boto3, the AWS side a stack needs before `pulumi up`; for nodePool.mode karpenter
and auto also what Karpenter needs in AWS and, through the Kubernetes API, in the cluster."""

from __future__ import annotations

import argparse
from functools import partial

from colo.aws.capacity_preflight import aws_capacity_checks
from colo.aws.clients import RegionMissing
from colo.aws.preflight import Check, run_checks
from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.errors import ConfigError, Problem
from colo.kube_preflight import ApiObjects, kube_capacity_checks
from colo.plan.capacity import capacity_spec
from colo.plan.stack import make_plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument("--region", help="AWS region; default: the stack's aws:region, then AWS_REGION")
    parser.add_argument(
        "--kubeconfig",
        help="for nodePool.mode karpenter or auto; default: KUBECONFIG or ~/.kube/config, as kubectl",
    )
    parser.add_argument("--context", help="kubeconfig context; default: the current one")


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
    # What Karpenter or EKS Auto Mode would launch: checked in AWS and in the cluster.
    capacity = capacity_spec(plan)
    more = partial(aws_capacity_checks, config, capacity) if capacity is not None else None
    try:
        checks = run_checks(config, plan.gpu, plan.gpus_per_node, region=region, more=more)
    except RegionMissing as exc:
        raise ConfigError([Problem("aws:region", str(exc))]) from None
    if capacity is not None:
        checks += kube_capacity_checks(capacity, partial(ApiObjects, args.kubeconfig, args.context))
    print(render(checks))
    return ExitCode.OK if all(c.ok for c in checks) else ExitCode.FAILS
