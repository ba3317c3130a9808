"""`colo preflight`: check, with boto3, the AWS side a stack needs before `pulumi up`; for nodePool.mode karpenter
and auto also what Karpenter needs in AWS and, through the Kubernetes API, in the cluster."""

from __future__ import annotations

import argparse
import os
from functools import partial

import boto3

from colo.aws.capacity_preflight import aws_capacity_checks
from colo.aws.clients import RegionMissing
from colo.aws.preflight import Check, run_checks, s3_uris
from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.config import StackConfig
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


def uses_no_aws(config: StackConfig, region: str | None) -> bool:
    """A stack on nodes that exist already, with no model in S3 and no AWS region anywhere: nothing of it is
    on AWS for preflight to check (with a region, its EKS cluster is checked)."""
    return region is None and config.node_pool.mode == "existing" and not s3_uris(config)


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    config = load_config(stack_file)
    # AWS_REGION as well as boto3's own lookup (AWS_DEFAULT_REGION, the profile), which skips AWS_REGION
    region = (
        args.region
        or config.aws_region
        or os.environ.get("AWS_REGION")
        or boto3.session.Session().region_name
    )
    if uses_no_aws(config, region):
        print(
            f"nothing to check: stack {stack_file.stack} uses no AWS (its nodes exist already, no model comes "
            "from S3, and no aws:region, --region or AWS_REGION is set); preflight checks only the AWS side, "
            "so give a region to check an EKS cluster"
        )
        return ExitCode.OK
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
