"""`colo verify`: hold the plan against what each vLLM server reported at startup.

Reads every server's startup log (and /metrics) from the cluster through the Kubernetes API, or from files
collected elsewhere (`--logs DIR`, `--log FILE --server PAIR/ROLE`), and compares it with the plan of the
same stack. Exit 0: every term within tolerance; 1: the plan was wrong (the first term off is named);
2: nothing could be read for some server (no kubeconfig, no pod, no file, a log without startup lines).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

from colo.cli.common import add_stack_arguments, load_config, read_stack_file
from colo.config import StackConfig
from colo.config.calibration import CalibrationError
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.verify.check import check_reading
from colo.verify.compare import Verdict, overall
from colo.verify.readings import ServerReading, read_log_dir, read_log_file
from colo.verify.record import record
from colo.verify.report import render_text, verify_view


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--logs", type=Path, help="a directory of <pair>-<role>.log files (and .metrics)")
    source.add_argument("--log", type=Path, help="one server's log; needs --server PAIR/ROLE")
    parser.add_argument("--server", help="PAIR/ROLE the --log file belongs to, e.g. chat/llm")
    parser.add_argument("--previous", action="store_true", help="read the previous run of each container")
    parser.add_argument("--kubeconfig", help="default: KUBECONFIG or ~/.kube/config, as kubectl")
    parser.add_argument("--context", help="kubeconfig context; default: the current one")
    parser.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    parser.add_argument(
        "--record", help="write what was observed to this calibration file (budget.calibration)"
    )
    parser.add_argument("--driver", help="NVIDIA driver version for --record when the node does not say it")


def _servers(plan: Plan) -> list[tuple[PairPlan, int, Server]]:
    return [(pair, index, server) for pair in plan.pairs for index, server in enumerate(pair.servers)]


def _cluster_readings(config: StackConfig, plan: Plan, args: argparse.Namespace) -> list[ServerReading] | str:
    from colo.components.labels import pair_selector
    from colo.verify.cluster import ClusterReader, ClusterUnreachable, ServerTarget

    spec = kubernetes_spec(config, plan)
    try:
        reader = ClusterReader(args.kubeconfig, args.context)
        return [
            reader.read(
                ServerTarget(
                    pair.name, server.role, spec.namespace, pair_selector(spec, pair.name), server.name
                ),
                previous=args.previous,
            )
            for pair, _, server in _servers(plan)
        ]
    except ClusterUnreachable as exc:
        return str(exc)


def _readings(config: StackConfig, plan: Plan, args: argparse.Namespace) -> list[ServerReading] | str:
    """Every planned server's reading, or one sentence saying why nothing could be read at all."""
    if args.log is not None:
        pair, _, role = (args.server or "").partition("/")
        if not (pair and role):
            return "--log needs --server PAIR/ROLE, e.g. --server chat/llm"
        return [read_log_file(args.log, pair, role)]
    if args.logs is not None:
        return read_log_dir(args.logs, [(pair.name, server.role) for pair, _, server in _servers(plan)])
    return _cluster_readings(config, plan, args)


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    config = load_config(stack_file)
    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    readings = _readings(config, plan, args)
    if isinstance(readings, str):
        print(f"colo verify: nothing could be read: {readings}", file=sys.stderr)
        return Verdict.UNREADABLE
    planned = {server.name: (server, index == 0) for _, index, server in _servers(plan)}
    checked = [check_reading(reading, planned) for reading in readings]
    checks = [check for check, _ in checked]
    if args.format == "json":
        print(json.dumps(verify_view(stack_file.stack, checks), indent=2))
    else:
        print(render_text(stack_file.stack, checks, markdown=args.format == "markdown"))
    if args.record:
        observed = [item for _, item in checked if item is not None]
        try:
            done, skipped = record(
                args.record, plan.gpu.name, observed, driver=args.driver, today=date.today()
            )
        except CalibrationError as exc:
            print(f"colo verify: nothing recorded: {exc}", file=sys.stderr)
            return Verdict.UNREADABLE
        for line in done:
            print(f"recorded in {args.record}: {line}", file=sys.stderr)
        for line in skipped:
            print(f"not recorded: {line}", file=sys.stderr)
    return overall(checks)
