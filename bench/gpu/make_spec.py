"""Turn a run file (bench/gpu/runs/*.yaml) into the spec the GPU machine's runner executes.

    python bench/gpu/make_spec.py bench/gpu/runs/dense.yaml --out spec.json

Each stack the run names is planned with `colo plan --format json` (bench/gpu/stacks/Pulumi.<stack>.yaml);
every server keeps the plan's `vllm_args` exactly, in order, and the run only appends `--load-format
dummy`, plus what the run's `server_options` give a server by name: `extra_args` after those (a flag the
run needs that does not change memory, e.g. a prefill kernel the wheel set can run, said why in the run
file), `env`, and `probe: true` (harness.startup_probe records its startup memory from inside). A start may
stand for servers of other stacks (`same_as`) only where their arguments are identical, so one process is
compared against each plan. Models come with their catalog config, from which the runner writes the
directories vLLM loads.

A run with `mps: true` has the runner keep a private CUDA MPS control daemon (bench/gpu/harness/mps.py); its
`derived` servers are copies of planned ones that differ only in what the pod would add: another `--port` (so
several copies can run at once), environment (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), and whether they start as MPS
clients (`mps_client`). Every other argument stays the plan's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
STACKS = HERE / "stacks"
EXTRA_ARGS = ("--load-format", "dummy")  # random weights: no checkpoint travels, the memory is the same
# What every server's environment adds, and why.
ENV = {
    "VLLM_USE_FLASHINFER_SAMPLER": "0",  # FlashInfer does not travel: the sampler takes PyTorch's path
    "VLLM_LOGGING_LEVEL": "DEBUG",  # 0.22 logs the memory profile and the startup summary at DEBUG
    "HF_HUB_OFFLINE": "1",  # no network there: never wait on the Hub
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",  # as colo's pods set it
    "DO_NOT_TRACK": "1",
    "PYTHONUNBUFFERED": "1",
    "CUDA_VISIBLE_DEVICES": "0",
}


class SpecError(ValueError):
    pass


def catalog_configs() -> dict[str, dict[str, Any]]:
    """Every catalog model's config.json keys, a `base:` entry's merged under its own."""
    data = yaml.safe_load(resources.files("colo.catalog").joinpath("models.yaml").read_text())
    entries = {entry["id"]: entry for entry in data["models"]}

    def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
        merged = dict(base)
        for key, value in extra.items():
            both = isinstance(value, Mapping) and isinstance(merged.get(key), Mapping)
            merged[key] = merge(merged[key], value) if both else value
        return merged

    def resolved(model_id: str) -> dict[str, Any]:
        entry = entries[model_id]
        config = dict(entry.get("config") or {})
        return merge(resolved(entry["base"]), config) if "base" in entry else config

    return {model_id: resolved(model_id) for model_id in entries}


def plan_json(stack: str) -> dict[str, Any]:
    """`colo plan --format json` of a stack under bench/gpu/stacks (a plan that does not fit is kept too)."""
    path = STACKS / f"Pulumi.{stack}.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "colo", "plan", "--config", str(path), "--format", "json"],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        raise SpecError(f"colo plan of {path} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout))


def plan_servers(stack: str, plan: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    servers = {}
    for pair in plan["pairs"]:
        for order, server in enumerate(pair["servers"]):
            args = list(server["vllm_args"])
            servers[server["name"]] = {
                "stack": stack,
                "pair": pair["name"],
                "role": server["role"],
                "order": order,
                "model": server["model"],
                "served_model_name": args[args.index("--served-model-name") + 1],
                "port": int(server["port"]),
                "args": args,
            }
    return servers


def _client(client: Mapping[str, Any], servers: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    name = client["server"]
    if name not in servers:
        raise SpecError(f"load client names {name}, which no planned stack has")
    server = servers[name]
    return {**client, "port": server["port"], "model": server["served_model_name"]}


SERVER_OPTIONS = ("extra_args", "env", "probe")


def _with_options(servers: dict[str, dict[str, Any]], options: Mapping[str, Any]) -> None:
    for name, chosen in options.items():
        if name not in servers:
            raise SpecError(f"server_options names {name}, which no planned stack has")
        unknown = sorted(set(chosen) - set(SERVER_OPTIONS))
        if unknown:
            raise SpecError(
                f"server_options.{name}: unknown key {unknown[0]} (known: {', '.join(SERVER_OPTIONS)})"
            )
        servers[name].update({key: chosen[key] for key in SERVER_OPTIONS if key in chosen})


def _with_port(args: list[str], port: int) -> list[str]:
    changed = list(args)
    changed[changed.index("--port") + 1] = str(port)
    return changed


def derived_servers(
    run: Mapping[str, Any], servers: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """The run's copies of planned servers, and whom each stands for: the planned servers (with the same arguments)
    whose plans its log is verified against, as listed; a copy that lists none is measured, not verified."""
    derived: dict[str, dict[str, Any]] = {}
    stands: dict[str, list[str]] = {}
    for entry in run.get("derived", []):
        name, origin = entry["name"], entry["from"]
        if name in servers or name in derived:
            raise SpecError(f"derived server {name} is named like another server")
        if origin not in servers:
            raise SpecError(f"derived server {name} comes from {origin}, which no planned stack has")
        for other in entry.get("stands_for", []):
            if other not in servers or servers[other]["args"] != servers[origin]["args"]:
                raise SpecError(f"{name} cannot stand for {other}: their planned arguments differ")
        server = {**servers[origin], "args": list(servers[origin]["args"])}  # a copy of its own
        if "port" in entry:
            server["port"] = int(entry["port"])
            server["args"] = _with_port(server["args"], server["port"])
        server["env"] = {str(k): str(v) for k, v in entry.get("env", {}).items()}
        server["mps_client"] = bool(entry.get("mps_client", False))
        server["derived_from"] = origin
        derived[name] = server
        stands[name] = list(entry.get("stands_for", []))  # compare_run verifies these plans with its log
    return derived, stands


def build_spec(run: Mapping[str, Any], plans: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    servers: dict[str, dict[str, Any]] = {}
    for stack, plan in plans.items():
        servers.update(plan_servers(stack, plan))
    _with_options(servers, run.get("server_options") or {})
    derived, derived_stands = derived_servers(run, servers)
    servers.update(derived)
    actions: list[dict[str, Any]] = []
    started: dict[str, list[str]] = {}
    for action in run["actions"]:
        if "start" in action:
            name = action["start"]
            if name not in servers:
                raise SpecError(f"start {name}: no planned stack has that server")
            for other in action.get("same_as", []):
                if other not in servers or servers[other]["args"] != servers[name]["args"]:
                    raise SpecError(f"{name} cannot stand for {other}: their planned arguments differ")
            started[name] = derived_stands.get(name, [name, *action.get("same_as", [])])
            actions.append({k: v for k, v in action.items() if k != "same_as"})
        elif "load" in action:
            phase = action["load"]
            actions.append({"load": {**phase, "clients": [_client(c, servers) for c in phase["clients"]]}})
        else:
            actions.append(dict(action))
    used = {name: servers[name] for name in started}
    catalog = catalog_configs()
    models = {server["model"]: catalog[server["model"]] for server in used.values()}
    return {
        "name": run["name"],
        "deadline_s": run["deadline_s"],
        "mps": bool(run.get("mps", False)),
        "gpu": 0,
        "env": {**ENV, **run.get("env", {})},
        "extra_args": list(EXTRA_ARGS),
        "models": models,
        "servers": {name: {**server, "stands_for": started[name]} for name, server in used.items()},
        "actions": actions,
        "plans": dict(plans),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    run = yaml.safe_load(args.run.read_text())
    plans = {stack: plan_json(stack) for stack in run["stacks"]}
    try:
        spec = build_spec(run, plans)
    except SpecError as exc:
        print(f"make_spec: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(spec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
