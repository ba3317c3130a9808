"""`colo load`: what the companions cost the LLM on your own cluster, measured in place, bounded.

For each pair (or --pair), through the Kubernetes API's port-forward into the pair's pod (colo.load.portforward
says why), or to servers on this machine's loopback (--loopback ROLE=PORT, e.g. behind a port-forward of your own):
the companions alone, then per LLM concurrency the LLM alone and beside its busy companions, each phase bounded in
requests and seconds and the whole probe by --max-seconds; every connection is closed at the end. Reports time to
first token and time per output token (streamed completions) and the companions' requests per second, and the cost
beside over alone. Exit 0: measured; 2: nothing could be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

from colo.cli.common import ExitCode, add_stack_arguments, load_config, read_stack_file
from colo.config import Pair, StackConfig
from colo.load.phases import MAX_CONCURRENCY, LoadSettings, Phase, costs, probe
from colo.load.requests import Connector, Kind, Target
from colo.roles import ROLES, Role
from colo.verify.cluster import ClusterUnreachable

LOOPBACK = "127.0.0.1"
KIND: dict[Role, Kind] = {Role.LLM: "completions", Role.EMBEDDING: "embeddings", Role.RERANKER: "rerank"}


def _concurrency(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"between 1 and {MAX_CONCURRENCY}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError("between 1 and 3600 seconds")
    return value


def _loopback(text: str) -> tuple[str, int]:
    role, _, port = text.partition("=")
    if role not in {r.value for r in Role} or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"ROLE=PORT with ROLE one of {', '.join(r.value for r in Role)}")
    return role, int(port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stack_arguments(parser)
    parser.add_argument("--pair", help="the pair to load (default: each pair in turn)")
    parser.add_argument("--kubeconfig", help="default: KUBECONFIG or ~/.kube/config, as kubectl")
    parser.add_argument("--context", help="kubeconfig context; default: the current one")
    parser.add_argument(
        "--loopback",
        type=_loopback,
        action="append",
        metavar="ROLE=PORT",
        help="reach ROLE on 127.0.0.1:PORT instead of through the cluster (every role of the pair; one pair)",
    )
    parser.add_argument(
        "--concurrency", type=_concurrency, nargs="+", default=[1, 16], help="LLM concurrencies"
    )
    parser.add_argument(
        "--requests-per-slot", type=int, default=2, help="LLM requests per phase = this x concurrency"
    )
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--companion-concurrency", type=_concurrency, default=4)
    parser.add_argument("--phase-seconds", type=_seconds, default=60.0, help="the longest one phase may take")
    parser.add_argument(
        "--max-seconds", type=_seconds, default=600.0, help="the longest the whole probe may take"
    )
    parser.add_argument(
        "--api-key-env",
        default="VLLM_API_KEY",
        help="environment variable holding the servers' API key, where colo:vllmApiKey is set",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def _targets(pair: Pair, api_key: str | None, loopback: dict[str, int]) -> tuple[Target, list[Target]]:
    made = {
        role: Target(
            role.value, loopback.get(role.value, ROLES[role].port), server.model, KIND[role], api_key
        )
        for role, server in pair.servers()
    }
    return made[Role.LLM], [t for role, t in made.items() if role is not Role.LLM]


def _settings(args: argparse.Namespace) -> LoadSettings:
    return LoadSettings(
        concurrencies=tuple(args.concurrency),
        requests_per_slot=max(1, min(args.requests_per_slot, 64)),
        prompt_tokens=max(1, min(args.prompt_tokens, 32_768)),
        max_tokens=max(2, min(args.max_tokens, 4096)),
        companion_concurrency=args.companion_concurrency,
        phase_seconds=args.phase_seconds,
        max_seconds=args.max_seconds,
    )


def _loopback_connector(port: int) -> socket.socket:
    return socket.create_connection((LOOPBACK, port), timeout=10)


def _pairs(config: StackConfig, name: str | None) -> list[Pair]:
    if name is None:
        return list(config.pairs)
    chosen = [p for p in config.pairs if p.name == name]
    if not chosen:
        known = ", ".join(p.name for p in config.pairs)
        raise ClusterUnreachable(f"the stack has no pair {name} (its pairs: {known})")
    return chosen


def _probe_pair(config: StackConfig, pair: Pair, args: argparse.Namespace) -> dict[str, Any]:
    api_key = os.environ.get(args.api_key_env) if config.vllm_api_key_set else None
    loopback = dict(args.loopback or [])
    llm, companions = _targets(pair, api_key, loopback)
    settings = _settings(args)
    if loopback:
        return _report(pair, "loopback", probe(_loopback_connector, llm, companions, settings), llm.role)
    from colo.components.labels import pair_selector_of
    from colo.load.portforward import PortForwards, core_api, pair_pod

    core = core_api(args.kubeconfig, args.context)
    namespace = config.cluster.namespace
    pod = pair_pod(core, namespace, pair_selector_of(config.cluster.name, pair.name))
    forwards = PortForwards(core, namespace, pod)
    connector: Connector = forwards.connect
    try:
        phases = probe(connector, llm, companions, settings)
    finally:
        forwards.close()
    return _report(pair, f"port-forward to {namespace}/{pod}", phases, llm.role)


def _report(pair: Pair, path: str, phases: Sequence[Phase], llm_role: str) -> dict[str, Any]:
    return {
        "pair": pair.name,
        "path": path,
        "phases": [
            {
                "label": p.label,
                "llm_concurrency": p.llm_concurrency,
                "companions_busy": p.companions_busy,
                "wall_s": p.wall_s,
                "skipped": p.skipped,
                "servers": p.summaries,
            }
            for p in phases
        ],
        "cost": costs(phases, llm_role),
    }


def _row(phase: dict[str, Any], llm_role: str) -> list[str]:
    if phase["skipped"]:
        return [phase["label"], f"skipped: {phase['skipped']}", "", "", "", ""]
    llm = phase["servers"].get(llm_role)
    others = ", ".join(
        f"{role} {s['requests_per_s']}/s" for role, s in phase["servers"].items() if role != llm_role
    )
    if llm is None:
        return [phase["label"], "", "", "", "", others]
    return [
        phase["label"],
        f"{llm['ok']}/{llm['requests']}",
        str(llm["ttft_p50_ms"]),
        str(llm["ttft_p90_ms"]),
        str(llm["tpot_p50_ms"]),
        others,
    ]


def render_text(reports: Sequence[dict[str, Any]]) -> str:
    headers = ["phase", "LLM ok", "TTFT p50 ms", "TTFT p90 ms", "TPOT p50 ms", "companions"]
    lines: list[str] = []
    for report in reports:
        rows = [_row(phase, Role.LLM.value) for phase in report["phases"]]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        lines += ["", f"pair {report['pair']} ({report['path']})", ""]
        lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        for load, cost in report["cost"].items():
            rates = ", ".join(
                f"{role} {v:+.0f} %"
                for role, v in cost.get("companions_rate_percent", {}).items()
                if v is not None
            )
            lines.append(
                f"beside companions at {load}: TTFT {_signed(cost['ttft_p50_percent'])}, TPOT "
                f"{_signed(cost['tpot_p50_percent'])} over alone"
                + (f"; companions {rates} over alone" if rates else "")
            )
        if report["path"].startswith("port-forward"):
            lines.append(
                "latencies include the port-forward's round trip through the API server, the same in every phase"
            )
    return "\n".join(lines).lstrip("\n")


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.0f} %"


def run(args: argparse.Namespace) -> int:
    config = load_config(read_stack_file(args))
    try:
        pairs = _pairs(config, args.pair)
        if args.loopback and len(pairs) != 1:
            raise ClusterUnreachable("--loopback reaches one pair's servers; choose it with --pair")
        reports = [_probe_pair(config, pair, args) for pair in pairs]
    except ClusterUnreachable as exc:
        print(f"colo load: nothing could be measured: {exc}", file=sys.stderr)
        return ExitCode.INVALID
    if args.format == "json":
        print(json.dumps(reports, indent=2))
    else:
        print(render_text(reports))
    unreached = [r["pair"] for r in reports if not _llm_answered(r)]
    if unreached:
        print(f"colo load: no LLM request of pair {', '.join(unreached)} succeeded", file=sys.stderr)
        return ExitCode.INVALID
    return ExitCode.OK


def _llm_answered(report: dict[str, Any]) -> bool:
    return any(
        phase["servers"].get(Role.LLM.value, {}).get("ok", 0) > 0
        for phase in report["phases"]
        if not phase["skipped"]
    )
