"""Hold colo's plans against a GPU run: `colo verify --logs` per stack, and every figure in one table.

    python bench/gpu/compare_run.py RUN_DIR --out bench/gpu/results/<date>-h200-<run>

RUN_DIR holds what the runner wrote (results.json, logs.tar.gz). For each stack of the run, the logs of the
processes that stood for its servers are laid out as `colo verify --logs` reads them (<pair>-<role>.log and
.metrics) and verified; then every figure colo predicts is set beside what vLLM printed and nvidia-smi
showed. Writes OUT.json (everything) and OUT.md (the tables).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: bench/gpu is not a package on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.gpu.log_figures import figures as log_figures
from bench.gpu.make_spec import STACKS

Row = tuple[str, Any, Any, Any]  # figure, colo's plan, vLLM's log, nvidia-smi


def _stands_for(spec: Mapping[str, Any]) -> dict[str, str]:
    """Planned server name -> the started process (its log's name) that stood for it."""
    return {alias: name for name, server in spec["servers"].items() for alias in server["stands_for"]}


def verify_dir(spec: Mapping[str, Any], stack: str, logs: Path, into: Path) -> Path:
    """A `colo verify --logs` directory for one stack: each server's log under its own name."""
    into.mkdir(parents=True, exist_ok=True)
    process_of = _stands_for(spec)
    for pair in spec["plans"][stack]["pairs"]:
        for server in pair["servers"]:
            process = process_of.get(server["name"])
            for suffix in (".log", ".metrics"):
                source = logs / f"{process}{suffix}"
                if process is not None and source.is_file():
                    (into / f"{server['name']}{suffix}").write_bytes(source.read_bytes())
    return into


def run_verify(stack: str, logs: Path) -> dict[str, Any]:
    config = STACKS / f"Pulumi.{stack}.yaml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "colo",
            "verify",
            "--config",
            str(config),
            "--logs",
            str(logs),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
    )
    try:
        view: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        view = {"unparsed_stdout": done.stdout[-2000:]}
    for server in view.get("servers", []):  # a temporary directory's name says nothing: keep the file's
        server["source"] = Path(server["source"]).name
    return {**view, "exit_code": done.returncode, "stderr": done.stderr[-2000:]}


def process_memory(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per started server, nvidia-smi's MiB for its process: after its start, and the most seen later.

    nvidia-smi lists the engine process (a child of the one started), so a server's process is the one that
    appeared in the reading after its start."""
    owner: dict[int, str] = {}
    seen: dict[str, dict[str, int]] = {}
    ready = {r["server"] for r in records if r["action"] == "start" and r.get("outcome") == "ready"}
    for record in records:
        if record["action"] != "smi" or "smi" not in record:
            continue
        label = str(record["label"])
        apps = {int(a["pid"]): int(a["used_mib"]) for a in record["smi"]["apps"]}
        if label.startswith("after-start-"):
            server = label.removeprefix("after-start-")
            for pid in apps.keys() - owner.keys():
                if server in ready:
                    owner[pid] = server
                    seen[server] = {
                        "after_start": apps[pid],
                        "largest": apps[pid],
                        "gpu_free_after_start": record["free_mib"],
                    }
        for pid, used in apps.items():
            if pid in owner:
                seen[owner[pid]]["largest"] = max(seen[owner[pid]]["largest"], used)
    return seen


def server_rows(
    memory: Mapping[str, Any], logged: Mapping[str, Any], smi: Mapping[str, int] | None
) -> list[Row]:
    graphs = logged.get("graphs_by_mode") or {}
    graph_text = ", ".join(f"{mode} {count}" for mode, count in graphs.items()) or "none"
    footprint = memory.get("footprint_mib")
    return [
        (
            "weights GiB",
            memory.get("weights_gib"),
            logged.get("profile_weights_gib") or logged.get("weights_gib"),
            None,
        ),
        (
            "activation peak GiB",
            memory.get("activation_peak_gib"),
            logged.get("profile_activation_gib"),
            None,
        ),
        ("non-torch GiB", memory.get("non_torch_gib"), logged.get("profile_non_torch_gib"), None),
        (
            "CUDA graph estimate GiB",
            memory.get("cuda_graph_estimate_gib", memory.get("cuda_graph_gib")),
            logged.get("graph_estimate_gib"),
            None,
        ),
        ("CUDA graph captured GiB", memory.get("cuda_graph_gib"), logged.get("graph_captured_gib"), None),
        ("CUDA graphs (count)", memory.get("cuda_graphs"), f"{logged.get('graphs')} ({graph_text})", None),
        ("requested GiB", memory.get("requested_gib"), logged.get("requested_gib"), None),
        ("KV pool GiB", memory.get("kv_cache_gib"), logged.get("kv_pool_gib"), None),
        ("KV tokens", memory.get("kv_tokens"), logged.get("kv_tokens"), None),
        ("max concurrency", memory.get("max_concurrency"), logged.get("max_concurrency"), None),
        (
            "process MiB after start (plan: footprint)",
            footprint,
            None,
            None if smi is None else smi["after_start"],
        ),
        (
            "process MiB, most under load (plan: footprint)",
            footprint,
            None,
            None if smi is None else smi["largest"],
        ),
    ]


def _verify_server(view: Mapping[str, Any], name: str) -> dict[str, Any]:
    return next((dict(server) for server in view.get("servers", []) if server["server"] == name), {})


def _verify_terms(view: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {t["term"]: t["observed"] for t in _verify_server(view, name).get("terms", [])}


def compare(run_dir: Path, work: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    spec, records = results["spec"], results["records"]
    with tarfile.open(run_dir / "logs.tar.gz") as tar:
        tar.extractall(work, filter="data")
    logs = work / "logs"
    process_of = _stands_for(spec)
    smi = process_memory(records)
    stacks: dict[str, Any] = {}
    for stack, plan in spec["plans"].items():
        view = run_verify(stack, verify_dir(spec, stack, logs, work / "verify" / stack))
        servers: dict[str, dict[str, Any]] = {}
        for pair in plan["pairs"]:
            for server in pair["servers"]:
                process = process_of.get(server["name"])
                log = logs / f"{process}.log"
                if process is None or not log.is_file():
                    servers[server["name"]] = {"not_run": True}
                    continue
                logged = {
                    **log_figures(log.read_text(errors="replace")),
                    **_verify_terms(view, server["name"]),
                }
                logged.setdefault("weights_gib", logged.get("weights"))
                logged["requested_gib"] = logged.get("requested")
                logged["kv_tokens"] = logged.get("kv_tokens")
                rows = server_rows(server["memory"], logged, smi.get(process))
                checked = _verify_server(view, server["name"])
                servers[server["name"]] = {
                    "process": process,
                    "logged": logged,
                    "rows": rows,
                    "verify_verdict": checked.get("verdict"),
                    "first_off": checked.get("first_off"),
                    "notes": checked.get("notes", []),
                }
        pair_free = [
            {
                "pair": p["name"],
                "predicted_free_mib": p["predicted_free_mib"],
                "observed_free_mib": smi.get(process_of.get(p["servers"][-1]["name"], ""), {}).get(
                    "gpu_free_after_start"
                ),
            }
            for p in plan["pairs"]
        ]
        stacks[stack] = {
            "verify": view,
            "servers": servers,
            "plan_feasible": plan["feasible"],
            "pairs": pair_free,
        }
    loads = [r for r in records if r["action"] == "load"]
    return {
        "run": spec["name"],
        "facts": records[0],
        "stacks": stacks,
        "loads": loads,
        "starts": [r for r in records if r["action"] in ("start", "skip", "stop")],
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def markdown(report: Mapping[str, Any]) -> str:
    lines = [f"# GPU run `{report['run']}`", ""]
    for stack, data in report["stacks"].items():
        view = data["verify"]
        lines += [f"## Stack {stack}: colo verify exit {view.get('exit_code')} ({view.get('verdict')})", ""]
        for pair in data["pairs"]:
            lines += [
                f"GPU free once pair {pair['pair']} has started (nvidia-smi MiB): planned {pair['predicted_free_mib']},"
                f" observed {_cell(pair['observed_free_mib'])}",
                "",
            ]
        for name, server in data["servers"].items():
            if server.get("not_run"):
                lines += [f"### {name}: not run", ""]
                continue
            logged = server["logged"]
            sizes = logged.get("capture_sizes") or []
            captured = f"sizes {sizes[0]}-{sizes[-1]} ({len(sizes)})" if sizes else "no capture sizes"
            lines += [
                f"### {name} (process {server['process']}; runner {logged['runner']}, "
                f"cudagraph_mode {logged.get('cudagraph_mode')}, {captured}, {logged.get('attention_backend')})",
                "",
                f"colo verify: {server['verify_verdict']}"
                + (f", first off: {server['first_off']}" if server["first_off"] else "")
                + "".join(f"; {note}" for note in server["notes"]),
                "",
                "| figure | colo plan | vLLM log | nvidia-smi |",
                "|---|---|---|---|",
                *(f"| {r[0]} | {_cell(r[1])} | {_cell(r[2])} | {_cell(r[3])} |" for r in server["rows"]),
                "",
            ]
    lines += [
        "## Loads",
        "",
        "| phase | server | kind | conc. | ok/requests | TTFT p50 s | TPOT p50 s | "
        "output tok/s | idle free MiB | min free MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for load in report["loads"]:
        for client in load["clients"]:
            lines.append(
                f"| {load['label']} | {client.get('server')} | {client.get('kind')} | {client.get('concurrency')} | "
                f"{client.get('ok')}/{client.get('requests')} | {_cell(client.get('ttft_p50_s'))} | "
                f"{_cell(client.get('tpot_p50_s'))} | {_cell(client.get('output_tokens_per_s'))} | "
                f"{_cell(load.get('idle_free_mib'))} | {_cell(load.get('min_free_mib'))} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="path without suffix: OUT.json and OUT.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        report = compare(args.run_dir, Path(work))
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
