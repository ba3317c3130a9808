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
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path

from colo.cli.common import add_stack_arguments, load_config, read_stack_file
from colo.config import StackConfig
from colo.plan.calibration import CalibrationError
from colo.plan.kubernetes_spec import kubernetes_spec
from colo.plan.pair import PairPlan
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.verify.compare import ServerCheck, Verdict, compare, overall
from colo.verify.metrics import cache_config_info
from colo.verify.readings import ServerReading, read_log_dir, read_log_file
from colo.verify.record import Observed, record
from colo.verify.report import render_text, verify_view
from colo.verify.shared_gpu import with_neighbours
from colo.verify.startup_log import parse_startup_log

NO_STARTUP_LINES = (
    "the log holds none of vLLM's startup lines (Model loading took, Available KV cache memory, GPU KV cache "
    "size, or a startup error): it may be cut, from another program, or from before the engine started"
)


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


def _check(
    reading: ServerReading, planned: dict[str, tuple[Server, bool]]
) -> tuple[ServerCheck, Observed | None]:
    """One server's check, and what `--record` may learn from it (None when nothing was read)."""
    base = ServerCheck(reading.pair, reading.role, reading.name, reading.source)
    if reading.name not in planned:
        known = ", ".join(name.replace("-", "/", 1) for name in planned) or "none"
        return replace(
            base, unread=f"the plan has no server {reading.pair}/{reading.role} (planned: {known})"
        ), None
    server, first_in_pod = planned[reading.name]
    if reading.unread is not None or reading.log_text is None:
        return replace(base, unread=reading.unread or "no log"), None
    log = parse_startup_log(reading.log_text)
    if not log.has_startup_lines:
        return replace(base, unread=NO_STARTUP_LINES), None
    cache = cache_config_info(reading.metrics_text) if reading.metrics_text else None
    notes: tuple[str, ...] = (
        (f"{log.ranks} tensor-parallel ranks logged; per-rank figures are the worst rank's",)
        if log.ranks > 1
        else ()
    )
    if log.serving_error is not None:
        notes += (f"started, then failed while serving: {log.serving_error.text}",)
    if log.utilization_cap is not None:
        cap = log.utilization_cap
        notes += (
            f"vLLM warned that gpu_memory_utilization={cap.utilization:g} caps it at {cap.cap_gib:g} GiB, "
            f"keeping {cap.withheld_gib:g} GiB of free memory out of its KV cache: on a shared GPU that cap is "
            "what leaves its neighbours their memory",
        )
    if log.extensible_disabled is not None:
        notes += (f"vLLM sized its KV cache from profiling estimates: {log.extensible_disabled}",)
    check = replace(
        base,
        results=compare(server.memory_plan.budget, log, cache, release=server.vllm_version),
        error=log.error.describe() if log.error else None,
        notes=notes,
    )
    return check, Observed(server, first_in_pod, reading, log)


def neighbour_checks(
    checked: list[tuple[ServerCheck, Observed | None]], pairs: Sequence[PairPlan]
) -> list[ServerCheck]:
    """The checks, each with the neighbours started before it on its GPU that hold more than planned while it
    got less (colo.verify.neighbours)."""
    gpus = [[(server.name, server.memory_plan.budget) for server in pair.servers] for pair in pairs]
    logs = {item.server.name: item.log for _, item in checked if item is not None}
    return with_neighbours([check for check, _ in checked], gpus, logs)


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_file(args)
    config = load_config(stack_file)
    plan = make_plan(config, s3_profile=s3_profile_reader(config))
    readings = _readings(config, plan, args)
    if isinstance(readings, str):
        print(f"colo verify: nothing could be read: {readings}", file=sys.stderr)
        return Verdict.UNREADABLE
    planned = {server.name: (server, index == 0) for _, index, server in _servers(plan)}
    checked = [_check(reading, planned) for reading in readings]
    checks = neighbour_checks(checked, plan.pairs)
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
