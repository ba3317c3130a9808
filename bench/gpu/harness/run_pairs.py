"""Run a spec of starts, loads and stops on the GPU machine; write every log, nvidia-smi reading and figure.

    python3 -m harness.run_pairs SPEC.json OUTDIR [--workdir DIR] [--executable vllm]

The spec (bench/gpu/make_spec.py writes it from `colo plan --format json`) names the models with their catalog
config, the servers with the plan's own arguments, and the actions in order: `{"start": NAME, "timeout_s": S,
"expect": "ready"|"refused", "as": LABEL}` (`as` names the log of a second start of the same server, e.g. a
restart on a warm compile cache), `{"load": {label, duration_s, clients}}`, `{"stop": NAME}`, `{"smi": LABEL}`,
`{"mps": "start"|"stop"|"status"}` and `{"pin": NAME|"runner", "cpus": "0-9"|"cores:0-4"|"all"}` (harness.cpus: a
running server's processes, or the runner and so its load generator, onto other host CPUs). A server starts on the
CPUs the spec gives it (`"cpus": "10-15"`), else on all the runner had. A server the spec marks `"probe": true`
runs with harness.startup_probe installed (probe_site first on its PYTHONPATH), which writes
`logs/<log name>-probe-<pid>.json` from its engine process. A spec with `"mps": true` runs a private CUDA MPS control daemon
(harness.mps) when told to; a server with `"mps_client": true` starts as its client, one with false away from it.
Servers still running at the end are stopped, then the daemon is told to quit; nothing else is touched. Every
action checks the spec's deadline first, so the run ends (and writes its results) within it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cpus import cores, format_cpus, pin, resolve
from .gpu_state import Sampler, snapshots
from .load import ClientSpec, run_phase
from .model_dirs import write_model_dir
from .mps import MpsDaemon, group_pids
from .servers import Running, ServerSpec, start, stop, stop_all, wait_ready

PROBE_SITE = Path(__file__).resolve().parent / "probe_site"  # its sitecustomize installs startup_probe
STOP_RESERVE_S = 45.0  # kept back from the deadline: stopping servers and packing the results
VERSIONS_OF = (
    "vllm",
    "torch",
    "transformers",
    "tokenizers",
    "triton",
    "numpy",
    "pydantic",
    "fastapi",
    "xgrammar",
)


def _now(t0: float) -> float:
    return round(time.monotonic() - t0, 1)


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in VERSIONS_OF:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine_facts(gpus: int = 1) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "packages": package_versions(),
        "cores": [format_cpus(core) for core in cores()],  # the host side of a CPU split (harness.cpus)
    }
    if gpus > 1:  # how the GPUs are linked decides the tensor-parallel communicators' memory
        try:
            facts["topology"] = subprocess.run(
                ["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=60
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            facts["topology"] = f"failed: {exc}"
    probe = "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
    try:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        facts["torch_probe"] = out.stdout.strip() or out.stderr.strip()[-500:]
    except (OSError, subprocess.SubprocessError) as exc:
        facts["torch_probe"] = f"failed: {exc}"
    return facts


def write_vllm_shim(bin_dir: Path) -> Path:
    """`vllm` on PATH for a wheel set installed with --target, whose own console script names another
    machine's interpreter: the same entry point, `vllm.entrypoints.cli.main:main`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "vllm"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m vllm.entrypoints.cli.main "$@"\n')
    shim.chmod(0o755)
    return shim


def fetch_metrics(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            return str(response.read().decode(errors="replace"))
    except OSError:
        return None


class StartFailed(RuntimeError):
    """A server that should have started did not: the rest of the run would only repeat the failure."""


@dataclass
class Run:
    spec: Mapping[str, Any]
    out: Path
    workdir: Path
    executable: str
    t0: float = field(default_factory=time.monotonic)
    running: dict[str, Running] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    mps: MpsDaemon | None = None  # the run's MPS control daemon, where the spec asks for one
    all_cpus: frozenset[int] = field(default_factory=lambda: frozenset(os.sched_getaffinity(0)))

    @property
    def logs(self) -> Path:
        return self.out / "logs"

    @property
    def remaining_s(self) -> float:
        return float(self.spec["deadline_s"]) - (time.monotonic() - self.t0) - STOP_RESERVE_S

    def env(self) -> dict[str, str]:
        return {**os.environ, **{str(k): str(v) for k, v in self.spec.get("env", {}).items()}}

    def record(self, kind: str, **data: Any) -> dict[str, Any]:
        entry = {"t": _now(self.t0), "action": kind, **data}
        self.records.append(entry)
        print(
            json.dumps({k: v for k, v in entry.items() if k not in ("smi", "phase", "per_gpu")}), flush=True
        )
        return entry

    @property
    def gpus(self) -> list[int]:
        """The GPUs the run uses: the spec's list, else its one GPU."""
        return [int(g) for g in self.spec.get("gpus") or [self.spec.get("gpu", 0)]]

    def smi(self, label: str) -> dict[str, Any]:
        """nvidia-smi on every GPU of the run; the first one's figures at the top level, each GPU's under
        `per_gpu` when there are several."""
        try:
            readings = snapshots(self.gpus)
        except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
            return self.record("smi", label=label, error=str(exc))
        for gpu, reading in readings.items():
            suffix = f"-gpu{gpu}" if len(readings) > 1 else ""
            table = reading.pop("table")
            (self.logs / f"nvidia-smi-{len(self.records):02d}-{label}{suffix}.txt").write_text(table)
        first = readings[self.gpus[0]]
        extra = {"per_gpu": {str(g): r for g, r in readings.items()}} if len(readings) > 1 else {}
        return self.record(
            "smi", label=label, used_mib=first["used_mib"], free_mib=first["free_mib"], smi=first, **extra
        )

    def server_spec(self, name: str, log_name: str) -> ServerSpec:
        data = self.spec["servers"][name]
        env = {str(k): str(v) for k, v in data.get("env", {}).items()}
        if data.get("probe"):
            env["COLO_PROBE_OUT"] = str(self.logs.resolve() / f"{log_name}-probe")
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(PROBE_SITE), self.env().get("PYTHONPATH", "")) if p
            )
        if self.mps is not None:  # as the pod sets it: every server a client, or (time-slice) none
            env.update(self.mps.client_env(bool(data.get("mps_client", False))))
        return ServerSpec(
            name=name,
            port=int(data["port"]),
            args=tuple(data["args"]),
            extra_args=(
                *self.spec.get("extra_args", ()),
                *(str(a) for a in data.get("extra_args", ())),
            ),
            env=env,
            cpus=self.cpus(data.get("cpus")),
        )

    def cpus(self, text: str | None) -> frozenset[int]:
        """The CPUs a spec's `cpus` names; none, or "all": every CPU the runner had when it started. A list that
        names none of those is refused (ValueError), as a split the machine cannot hold: the kernel would refuse
        an empty affinity mid-start."""
        if text in (None, "all"):
            return self.all_cpus
        cpus = resolve(str(text)) & self.all_cpus
        if not cpus:
            raise ValueError(f"CPUs {text} name none of the runner's ({format_cpus(self.all_cpus)})")
        return cpus

    def do_pin(self, action: Mapping[str, Any]) -> None:
        target = str(action["pin"])
        try:
            cpus = self.cpus(action.get("cpus"))
        except ValueError as exc:  # a split written for another machine: the run goes on unsplit, and says so
            self.record("skip", what=f"pin {target}", why=str(exc))
            return
        if target == "runner":
            pids = {os.getpid()}
        elif target in self.running:
            pids = group_pids(self.running[target].process.pid)
        else:
            self.record("skip", what=f"pin {target}", why="not running")
            return
        self.record("pin", target=target, cpus=format_cpus(cpus), threads=pin(pids, cpus))

    def mps_status(self, label: str) -> None:
        if self.mps is None or not self.mps.started:
            return
        servers = {name: group_pids(r.process.pid) for name, r in self.running.items()}
        self.record("mps", step="status", label=label, **self.mps.status(servers))

    def do_mps(self, step: str) -> None:
        if self.mps is None:
            self.record("skip", what=f"mps {step}", why="the spec runs no MPS daemon (mps: true)")
        elif step == "start":
            self.record("mps", step="start", **self.mps.start())
            if not self.mps.started:
                raise StartFailed("the MPS control daemon did not start; the clients after it need it")
        elif step == "stop":  # its clients first, as the pod stops its servers before the daemon's sidecar
            for name in reversed(list(self.running)):
                self.do_stop(name)
            self.record("mps", step="stop", **self.mps.stop())
        else:
            self.mps_status(step)

    def do_start(self, action: Mapping[str, Any]) -> None:
        name = str(action["start"])
        log_name = str(action.get("as", name))
        expect = action.get("expect", "ready")
        timeout = min(float(action.get("timeout_s", 600)), self.remaining_s)
        if timeout < float(action.get("min_s", 60)):
            self.record("skip", what=f"start {name}", why=f"deadline: {self.remaining_s:.0f} s left")
            return
        if name in self.running:
            self.record("skip", what=f"start {log_name}", why=f"{name} is still running")
            return
        try:
            server = self.server_spec(name, log_name)
        except ValueError as exc:
            self.record("skip", what=f"start {log_name}", why=str(exc))
            return
        running = start(
            server,
            executable=self.executable,
            workdir=self.workdir,
            log_path=self.logs / f"{log_name}.log",
            env=self.env(),
        )
        self.running[name] = running
        outcome = wait_ready(running, timeout_s=timeout)
        self.record(
            "start",
            server=name,
            log=log_name,
            pid=running.process.pid,
            expect=expect,
            outcome=outcome,
            ready_s=running.ready_s,
            exit_code=running.exit_code,
            command=server.command(self.executable),
            cpus=format_cpus(server.cpus or self.all_cpus),
        )
        if outcome == "ready":
            metrics = fetch_metrics(server.port)
            if metrics is not None:
                (self.logs / f"{log_name}.metrics").write_text(metrics)
        else:
            stop(self.running.pop(name))
        self.smi(f"after-start-{log_name}")
        self.mps_status(f"after-start-{log_name}")
        if outcome != "ready" and expect == "ready":
            raise StartFailed(f"{name} did not start ({outcome}); the actions after it need it")

    def do_load(self, phase: Mapping[str, Any]) -> None:
        label = str(phase["label"])
        wanted = float(phase.get("duration_s", 60))
        duration = min(wanted, self.remaining_s - 10)
        clients = [ClientSpec.from_json(c) for c in phase["clients"]]
        missing = [c.server for c in clients if c.server not in self.running]
        if missing or duration < min(wanted, 10):  # a short phase runs whole or not at all
            why = f"servers not running: {missing}" if missing else f"deadline: {self.remaining_s:.0f} s left"
            self.record("skip", what=f"load {label}", why=why)
            return
        before = self.smi(f"before-load-{label}")
        gpus = tuple(self.gpus) if len(self.gpus) > 1 else ()
        with Sampler(self.gpus[0], float(phase.get("sample_s", 0.5)), gpus=gpus) as sampler:
            summaries = run_phase(clients, duration_s=duration, seed_base=len(self.records) * 1000)
        self.record(
            "load",
            label=label,
            clients=summaries,
            phase=sampler.summary(),
            min_free_mib=sampler.summary().get("min_free_mib"),
            idle_free_mib=before.get("free_mib"),
        )
        self.smi(f"after-load-{label}")

    def do_stop(self, name: str) -> None:
        running = self.running.pop(name, None)
        if running is None:
            self.record("skip", what=f"stop {name}", why="not running")
            return
        stop(running)
        self.record("stop", server=name, exit_code=running.exit_code)

    def do(self, action: Mapping[str, Any]) -> None:
        if "start" in action:
            self.do_start(action)
        elif "load" in action:
            self.do_load(action["load"])
        elif "stop" in action:
            self.do_stop(str(action["stop"]))
        elif "smi" in action:
            self.smi(str(action["smi"]))
        elif "mps" in action:
            self.do_mps(str(action["mps"]))
        elif "pin" in action:
            self.do_pin(action)

    def execute(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.record("facts", **machine_facts(len(self.gpus)))
        self.smi("idle")
        try:
            for action in self.spec["actions"]:
                self.do(action)
        except StartFailed as exc:
            self.record("abort", why=str(exc))
        for name in reversed(list(self.running)):  # as a pod's containers stop: the last started first
            self.do_stop(name)
        if self.mps is not None and self.mps.started:  # the daemon last, as the pod's sidecar stops last
            self.do_mps("stop")
        self.smi("end")


def prepare(spec: Mapping[str, Any], workdir: Path) -> None:
    """Model directories under `workdir`, where `vllm serve <model id>` finds them as relative paths."""
    for model_id, config in spec["models"].items():
        write_model_dir(workdir, model_id, config)


def vllm_executable(workdir: Path) -> str:
    """`vllm` on PATH, else a shim for a wheel set installed with --target."""
    return shutil.which("vllm") or str(write_vllm_shim(workdir / "bin"))


def pack(out: Path, name: str = "logs.tar.gz") -> Path:
    archive = out / name
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(out / "logs", arcname="logs")
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("spec", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/colo-gpu-run"))
    parser.add_argument("--executable", help="the vllm to run (default: vllm on PATH, else a shim)")
    parser.add_argument("--deadline-s", type=float, help="seconds this run may take (default: the spec's)")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec.read_text())
    if args.deadline_s is not None:
        spec["deadline_s"] = min(float(spec["deadline_s"]), args.deadline_s)
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    prepare(spec, args.workdir)
    executable = args.executable or vllm_executable(args.workdir)
    run = Run(spec, args.out, args.workdir, executable)
    if spec.get("mps"):
        run.mps = MpsDaemon(args.workdir / "mps", run.env())
    try:
        run.execute()
    finally:
        stop_all(list(run.running.values()))
        if run.mps is not None and run.mps.started:
            run.records.append({"t": _now(run.t0), "action": "mps", "step": "stop", **run.mps.stop()})
        (args.out / "results.json").write_text(json.dumps({"spec": spec, "records": run.records}, indent=1))
        pack(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
