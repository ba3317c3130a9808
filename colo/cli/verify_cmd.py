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
from dataclasses import replace
from datetime import date
from pathlib import Path

from colo.cli.common import add_stack_arguments, load_config, read_stack_file
from colo.config import StackConfig
from colo.config.calibration import CalibrationError
from colo.errors import ArgumentsError, Problem
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.verify.check import check_readings
from colo.verify.compare import Verdict, overall
from colo.verify.ran_with import RanServer, differences, pinned_values, read_ran_with, start_order_note
from colo.verify.readings import ServerReading, read_log_dir, read_log_file
from colo.verify.record import Observed, record
from colo.verify.report import render_text, verify_view


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--logs", type=Path, help="a directory of <pair>-<role>.log files (and .metrics)")
    source.add_argument("--log", type=Path, help="one server's log; needs --server PAIR/ROLE")
    parser.add_argument("--server", help="PAIR/ROLE the --log file belongs to, e.g. chat/llm")
    parser.add_argument(
        "--plan",
        type=Path,
        metavar="FILE",
        help="compare with what the servers ran with, not with today's plan: `colo plan --format json` saved "
        "when they started, or a GPU run's spec or records (bench/gpu/results/*-records.json); the memory "
        "flags they ran with are pinned and any other difference is noted",
    )
    parser.add_argument("--previous", action="store_true", help="read the previous run of each container")
    parser.add_argument("--kubeconfig", help="default: KUBECONFIG or ~/.kube/config, as kubectl")
    parser.add_argument("--context", help="kubeconfig context; default: the current one")
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table: for a terminal (default); markdown: for a PR or an issue; json: for tools",
    )
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


def _readings(
    config: StackConfig, plan: Plan, args: argparse.Namespace, ran: dict[str, RanServer]
) -> list[ServerReading] | str:
    """Every planned server's reading, or one sentence saying why nothing could be read at all."""
    if args.log is not None:
        pair, _, role = args.server.partition("/")
        return [read_log_file(args.log, pair, role)]
    if args.logs is not None:
        stems = {name: server.log_stem for name, server in ran.items()}
        return read_log_dir(
            args.logs, [(pair.name, server.role) for pair, _, server in _servers(plan)], stems
        )
    return _cluster_readings(config, plan, args)


def check_arguments(args: argparse.Namespace) -> None:
    """What argparse cannot say alone: --log names one server's file, so it needs --server PAIR/ROLE."""
    if args.log is None:
        return
    pair, _, role = (args.server or "").partition("/")
    if not (pair and role):
        given = f"got '{args.server}'" if args.server else "missing argument"
        raise ArgumentsError(
            [Problem("--server", f"{given}: --log needs --server PAIR/ROLE, e.g. --server chat/llm")]
        )


def _ran_notes(plan: Plan, today: Plan, ran: dict[str, RanServer], source: Path) -> dict[str, list[str]]:
    """Per server: which memory flags were pinned to what ran (where today's plan differs), and any flag
    that still differs from what ran."""
    now = {server.name: server.args for _, _, server in _servers(today)}
    notes: dict[str, list[str]] = {}
    for pair, index, server in _servers(plan):
        if server.name not in ran:
            continue
        lines = [f"compared with the flags it ran with ({source})"]
        earlier = [s.name for s in pair.servers[:index]]
        if order := start_order_note(ran[server.name], earlier):
            lines.append(order)
        if server.name in now and (moved := differences(now[server.name], server.args)):
            lines.append("today's plan would differ: " + "; ".join(moved))
        if still := differences(server.args, ran[server.name].args):
            lines.append("flags colo does not pin, as they ran: " + "; ".join(still))
        notes[server.name] = lines
    return notes


def _planned(
    args: argparse.Namespace,
) -> tuple[str, StackConfig, Plan, dict[str, RanServer], dict[str, list[str]]]:
    """The stack's plan to compare with: today's, or with --plan the one pinned to the flags that ran (with
    the notes that say what was pinned)."""
    stack_file = read_stack_file(args)
    ran = read_ran_with(args.plan) if args.plan is not None else {}
    if not ran:
        config = load_config(stack_file)
        return stack_file.stack, config, make_plan(config, s3_profile=s3_profile_reader(config)), ran, {}
    today_config = load_config(stack_file)
    today = make_plan(today_config, s3_profile=s3_profile_reader(today_config))
    config = load_config(replace(stack_file, values=pinned_values(stack_file.values, ran)))
    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    return stack_file.stack, config, plan, ran, _ran_notes(plan, today, ran, args.plan)


def _started_only(
    readings: list[ServerReading], ran: dict[str, RanServer], source: Path
) -> list[ServerReading]:
    """With --plan, the servers its run started: it says nothing of the others."""
    if not ran:
        return readings
    skipped = [reading.name for reading in readings if reading.name not in ran]
    if skipped:
        print(f"colo verify: not started by {source}, not compared: {', '.join(skipped)}", file=sys.stderr)
    return [reading for reading in readings if reading.name in ran]


def _record(args: argparse.Namespace, plan: Plan, observed: list[Observed]) -> bool:
    """--record: what was observed into the calibration file; False when nothing could be recorded."""
    try:
        done, skipped = record(args.record, plan.gpu.name, observed, driver=args.driver, today=date.today())
    except CalibrationError as exc:
        print(f"colo verify: nothing recorded: {exc}", file=sys.stderr)
        return False
    for line in done:
        print(f"recorded in {args.record}: {line}", file=sys.stderr)
    for line in skipped:
        print(f"not recorded: {line}", file=sys.stderr)
    return True


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    stack, config, plan, ran, notes = _planned(args)
    readings = _readings(config, plan, args, ran)
    if isinstance(readings, str):
        print(f"colo verify: nothing could be read: {readings}", file=sys.stderr)
        return Verdict.UNREADABLE
    planned = {server.name: (server, index == 0) for _, index, server in _servers(plan)}
    checked, observed = check_readings(_started_only(readings, ran, args.plan), planned, plan.pairs)
    checks = [replace(check, notes=(*notes.get(check.name, ()), *check.notes)) for check in checked]
    if args.format == "json":
        print(json.dumps(verify_view(stack, checks), indent=2))
    else:
        print(render_text(stack, checks, markdown=args.format == "markdown"))
    if args.record and not _record(args, plan, observed):
        return Verdict.UNREADABLE
    return overall(checks)
