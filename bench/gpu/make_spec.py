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
several copies can run at once), environment (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), whether they start as MPS
clients (`mps_client`) and the host CPUs they run on (`cpus`). Every other argument stays the plan's, except in a
copy that changes one on purpose (`set_args`, e.g. a companion's `--max-num-batched-tokens`): such a copy is measured,
never verified against a plan.

A pair whose LLM spans GPUs (`tensorParallelSize`) runs on the machine's first GPUs as its plan lays them out: the
LLM sees every GPU of its group in the group's order, each companion the one GPU of the group the plan put it on,
numbered as nvidia-smi numbers them (CUDA_DEVICE_ORDER=PCI_BUS_ID); a pair on one GPU runs on GPU 0. A spec on more than one GPU must keep NVLink multicast off
(MULTICAST_OFF in the run's env), as the GPU machines' notes ask. `--gpu` plans every stack of the run for
another GPU of colo's catalog (H100-SXM or H200, whichever the machine has) without editing the stack files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from colo.catalog import instance_type
from colo.catalog.data import parse_yaml

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
# NVLink multicast off in NCCL, PyTorch and NVSHMEM: the multi-GPU machines require it (a program that uses it can
# put a shared host's GPUs out of service), and the stacks plan no NVLink SHARP buffers.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


class SpecError(ValueError):
    pass


def catalog_configs() -> dict[str, dict[str, Any]]:
    """Every catalog model's config.json keys, a `base:` entry's merged under its own."""
    data = parse_yaml(resources.files("colo.catalog").joinpath("models.yaml").read_text())
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


def stack_file(stack: str, gpu: str | None = None, into: Path | None = None) -> Path:
    """A stack under bench/gpu/stacks, or a copy of it planned for `gpu` (written under `into`)."""
    path = STACKS / f"Pulumi.{stack}.yaml"
    if gpu is None:
        return path
    values = yaml.safe_load(path.read_text())
    pool = dict(values["config"]["colo:nodePool"])
    if "instanceType" in pool:  # it carries another GPU: keep only how many a node has
        known = instance_type(pool.pop("instanceType"))
        pool.setdefault("gpusPerNode", known.gpus if known else 1)
    values["config"]["colo:nodePool"] = {**pool, "gpu": gpu}
    copy = (into or Path(tempfile.mkdtemp())) / path.name
    copy.write_text(yaml.safe_dump(values, sort_keys=False))
    return copy


def plan_json(stack: str, gpu: str | None = None) -> dict[str, Any]:
    """`colo plan --format json` of a stack under bench/gpu/stacks (a plan that does not fit is kept too)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = stack_file(stack, gpu, Path(scratch))
        done = subprocess.run(
            [sys.executable, "-m", "colo", "plan", "--config", str(path), "--format", "json"],
            capture_output=True,
            text=True,
        )
    if done.returncode not in (0, 1):
        raise SpecError(f"colo plan of {path} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return dict(json.loads(done.stdout))


def _devices(pair: Mapping[str, Any]) -> dict[str, list[int]] | None:
    """The GPUs each server of a tensor-parallel pair runs on, numbered from the group's first: every GPU of the
    group for the LLM, the GPU of the group its plan put each companion on. None for a pair on one GPU, which
    runs on the harness's GPU 0 whatever GPU its stack placed it on."""
    group = pair.get("group")
    if not group:
        return None
    llm = pair["servers"][-1]["name"]
    devices = {llm: list(range(int(group["tensor_parallel_size"])))}
    companions = {s["name"] for s in pair["servers"][:-1]}
    for gpu in group["gpus"]:
        for server in gpu["servers"]:
            if server["name"] in companions:
                devices[server["name"]] = [int(gpu["gpu"])]
    return devices


def plan_servers(stack: str, plan: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    servers = {}
    for pair in plan["pairs"]:
        devices = _devices(pair)
        for order, server in enumerate(pair["servers"]):
            args = list(server["vllm_args"])
            gpus = devices[server["name"]] if devices else [0]
            servers[server["name"]] = {
                "stack": stack,
                "pair": pair["name"],
                "role": server["role"],
                "order": order,
                "model": server["model"],
                "served_model_name": args[args.index("--served-model-name") + 1],
                "port": int(server["port"]),
                "args": args,
                "gpus": gpus,
            }
            if devices:
                servers[server["name"]]["env"] = {
                    "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus)),
                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",  # indices as nvidia-smi gives them
                }
    return servers


def _client(client: Mapping[str, Any], servers: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    name = client["server"]
    if name not in servers:
        raise SpecError(f"load client names {name}, which no planned stack has")
    server = servers[name]
    return {**client, "port": server["port"], "model": server["served_model_name"]}


SERVER_OPTIONS = ("extra_args", "env", "probe", "cpus")


def _with_options(servers: dict[str, dict[str, Any]], options: Mapping[str, Any]) -> None:
    for name, chosen in options.items():
        if name not in servers:
            raise SpecError(f"server_options names {name}, which no planned stack has")
        unknown = sorted(set(chosen) - set(SERVER_OPTIONS))
        if unknown:
            raise SpecError(
                f"server_options.{name}: unknown key {unknown[0]} (known: {', '.join(SERVER_OPTIONS)})"
            )
        server = servers[name]
        server.update({key: chosen[key] for key in SERVER_OPTIONS if key in chosen and key != "env"})
        if "env" in chosen:  # beside the GPUs the plan placed it on, not instead of them
            server["env"] = {**server.get("env", {}), **chosen["env"]}


def _with_value(args: list[str], flag: str, value: str) -> list[str]:
    """The plan's arguments with one flag's value changed in place (the flag must be there)."""
    if flag not in args:
        raise SpecError(f"{flag} is not among the planned arguments, so a copy cannot change it")
    changed = list(args)
    changed[changed.index(flag) + 1] = value
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
            server["args"] = _with_value(server["args"], "--port", str(server["port"]))
        for flag, value in entry.get("set_args", {}).items():  # a measured variant: it stands for no plan
            if entry.get("stands_for"):
                raise SpecError(f"{name} changes {flag}, so it cannot stand for a planned server")
            server["args"] = _with_value(server["args"], str(flag), str(value))
        if "cpus" in entry:
            server["cpus"] = str(entry["cpus"])
        # the GPUs of the planned server it copies, and what the run adds
        server["env"] = {**server.get("env", {}), **{str(k): str(v) for k, v in entry.get("env", {}).items()}}
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
    gpus = sorted({gpu for server in used.values() for gpu in server["gpus"]}) or [0]
    env = {**ENV, **run.get("env", {})}
    missing = {k: v for k, v in MULTICAST_OFF.items() if env.get(k) != v}
    if len(gpus) > 1 and missing:
        wanted = ", ".join(f"{k}: '{v}'" for k, v in missing.items())
        raise SpecError(
            f"the run uses GPUs {gpus}: set {wanted} in its env (NVLink multicast stays off on the GPU machines, "
            f"and the plans size no NVLink SHARP buffers for them)"
        )
    return {
        "name": run["name"],
        "deadline_s": run["deadline_s"],
        "mps": bool(run.get("mps", False)),
        "gpu": gpus[0],
        "gpus": gpus,
        "env": env,
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
    parser.add_argument(
        "--gpu", help="plan the run's stacks for this GPU of colo's catalog (default: theirs)"
    )
    args = parser.parse_args(argv)
    run = yaml.safe_load(args.run.read_text())
    plans = {stack: plan_json(stack, args.gpu) for stack in run["stacks"]}
    try:
        spec = build_spec(run, plans)
    except SpecError as exc:
        print(f"make_spec: {exc}", file=sys.stderr)
        return 2
    if args.gpu is not None:
        spec["stack_gpu"] = args.gpu  # compare_run verifies against the stacks as they were planned
    args.out.write_text(json.dumps(spec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
