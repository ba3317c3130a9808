"""Hold colo's plans against a GPU run: `colo verify --logs` per stack, and every figure in one table.

    python bench/gpu/compare_run.py RUN_DIR --out bench/gpu/results/<date>-h200-<run>

RUN_DIR holds what the runner wrote (results.json, logs.tar.gz). For each stack of the run, the logs of the
processes that stood for its servers are laid out as `colo verify --logs` reads them (<pair>-<role>.log and
.metrics) and verified; then every figure colo predicts is set beside what vLLM printed and nvidia-smi
showed. A pair whose LLM spans GPUs gets a table per GPU of its group: each server's process there (the LLM's
rank on it) beside its planned footprint, the rank's KV pool beside the one its own log lines give, and the
GPU's free memory. Writes OUT.json (everything) and OUT.md (the tables).
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
from bench.gpu.log_figures import rank_figures
from bench.gpu.make_spec import stack_file

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


def run_verify(stack: str, logs: Path, gpu: str | None = None) -> dict[str, Any]:
    config = stack_file(stack, gpu, logs.parent)  # the stack as the run planned it (another GPU: --gpu)
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


def gpu_process_memory(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Per started server and GPU (as nvidia-smi numbers it), the MiB of its processes there: after its start
    and the most seen later; every process that appeared on a GPU after a server's start is that server's (the
    LLM's worker of that GPU's rank). From runs that read every GPU (`per_gpu`)."""
    owner: dict[tuple[str, int], str] = {}
    seen: dict[str, dict[str, dict[str, int]]] = {}
    ready = {r["server"] for r in records if r["action"] == "start" and r.get("outcome") == "ready"}
    for record in records:
        if record["action"] != "smi" or "per_gpu" not in record:
            continue
        label = str(record["label"])
        for gpu, reading in record["per_gpu"].items():
            apps = {int(a["pid"]): int(a["used_mib"]) for a in reading["apps"]}
            server = label.removeprefix("after-start-")
            if label.startswith("after-start-") and server in ready:
                new = [pid for pid in apps if (gpu, pid) not in owner]
                for pid in new:
                    owner[(gpu, pid)] = server
                if new:
                    held = sum(apps[pid] for pid in new)
                    seen.setdefault(server, {})[gpu] = {
                        "after_start": held,
                        "largest": held,
                        "gpu_free_after_start": int(reading["free_mib"]),
                    }
            totals: dict[str, int] = {}
            for pid, used in apps.items():
                if (gpu, pid) in owner:
                    totals[owner[(gpu, pid)]] = totals.get(owner[(gpu, pid)], 0) + used
            for name, used in totals.items():
                if gpu in seen.get(name, {}):
                    seen[name][gpu]["largest"] = max(seen[name][gpu]["largest"], used)
    return seen


def group_report(
    pair: Mapping[str, Any],
    process_of: Mapping[str, str],
    memory: Mapping[str, Mapping[str, Mapping[str, int]]],
    logs: Path,
) -> list[dict[str, Any]]:
    """Every GPU of a tensor-parallel pair's group: the plan's servers there beside their processes, the rank's
    KV pool beside its own log lines, the GPU's free memory once the LLM started."""
    llm = pair["servers"][-1]["name"]
    llm_process = process_of.get(llm, "")
    log = logs / f"{llm_process}.log"
    ranks = rank_figures(log.read_text(errors="replace")) if log.is_file() else {}
    out = []
    for gpu in pair["group"]["gpus"]:
        node = str(int(gpu["gpu"]))  # the run puts GPU k of the group on the machine's GPU k (make_spec)
        rows = []
        for server in gpu["servers"]:
            process = (
                llm_process if server["name"].startswith(f"{llm} rank ") else process_of.get(server["name"])
            )
            observed = memory.get(process or "", {}).get(node, {})
            rows.append(
                {
                    "server": server["name"],
                    "plan_footprint_mib": server["footprint_mib"],
                    "after_start_mib": observed.get("after_start"),
                    "largest_mib": observed.get("largest"),
                }
            )
        rank = ranks.get(f"rank{gpu['gpu']}", {})
        out.append(
            {
                "gpu": gpu["gpu"],
                "node_gpu": int(node),
                "servers": rows,
                "plan_kv_gib": gpu["servers"][-1]["kv_cache_gib"],
                "logged_kv_gib": rank.get("kv_pool_gib"),
                "logged_non_torch_gib": rank.get("profile_non_torch_gib"),
                "plan_free_mib": gpu["predicted_free_mib"],
                "observed_free_mib": memory.get(llm_process, {}).get(node, {}).get("gpu_free_after_start"),
            }
        )
    return out


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
    per_gpu = gpu_process_memory(records)
    stacks: dict[str, Any] = {}
    for stack, plan in spec["plans"].items():
        view = run_verify(
            stack, verify_dir(spec, stack, logs, work / "verify" / stack), spec.get("stack_gpu")
        )
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
        groups = {
            p["name"]: group_report(p, process_of, per_gpu, logs) for p in plan["pairs"] if p.get("group")
        }
        stacks[stack] = {
            "verify": view,
            "servers": servers,
            "plan_feasible": plan["feasible"],
            "pairs": pair_free,
            "groups": groups,
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


def _group_lines(pair: str, gpus: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        f"### pair {pair}: every GPU of its group",
        "",
        "| GPU (node) | server | plan footprint MiB | nvidia-smi after start | most seen | rank KV GiB plan / log | "
        "rank non-torch GiB (log) | GPU free MiB plan / observed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for gpu in gpus:
        for index, row in enumerate(gpu["servers"]):
            rank = index == len(gpu["servers"]) - 1
            lines.append(
                f"| {gpu['gpu']} ({gpu['node_gpu']}) | {row['server']} | {row['plan_footprint_mib']} | "
                f"{_cell(row['after_start_mib'])} | {_cell(row['largest_mib'])} | "
                + (
                    f"{_cell(gpu['plan_kv_gib'])} / {_cell(gpu['logged_kv_gib'])} | "
                    f"{_cell(gpu['logged_non_torch_gib'])} | "
                    f"{gpu['plan_free_mib']} / {_cell(gpu['observed_free_mib'])} |"
                    if rank
                    else "- | - | - |"
                )
            )
    return [*lines, ""]


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
        for pair_name, gpus in data.get("groups", {}).items():
            lines += _group_lines(pair_name, gpus)
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
