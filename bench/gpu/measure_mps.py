"""Measure what CUDA MPS costs in GPU memory, with PyTorch alone: the MPS server, each client's context and cuBLAS
by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and what a client started with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT sees.

    python3 bench/gpu/measure_mps.py [--gpu 0] [--out FILE] [--workdir DIR] [--percentages 100 100 50 25]

1. A plain process (no daemon at its pipe directory): its context and first matmul, as measure_overhead.py reads
   them, for comparison.
2. A private MPS control daemon (pipe and log directories under --workdir), then one client after another, each kept
   alive: after each client's context and after its first matmul nvidia-smi's memory.used is read. The first client
   also brings up the MPS server, so server = (first client's context step) - (second client's, same percentage).
   Each client reports torch.cuda.mem_get_info(), the SM count CUDA gives it, and whether the daemon lists it.
3. With the clients gone, one client started with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=<gpu>=<N>G reports what
   mem_get_info and the device properties say its total is, and whether it can allocate just under and just over
   the limit.
4. The daemon is told to quit, and every worker stopped, whatever happened.

The result's `catalog_entry` is the colo/catalog/mps.yaml entry for this GPU, to be checked and copied there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere: bench.gpu.*

from bench.gpu.harness.mps import MpsDaemon

SETTLE_S = 0.5  # nvidia-smi samples; let it settle after each step
MIB = 1024**2

WORKER = r"""
import os, sys, torch
mode = sys.argv[1]
def info():
    free, total = torch.cuda.mem_get_info()
    return free, total
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
if mode == "pinned":
    limit = int(sys.argv[2])
    free, total = info()
    props = torch.cuda.get_device_properties(0).total_memory
    def fits(nbytes):
        try:
            block = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            del block
            torch.cuda.empty_cache()
            return 1
        except RuntimeError:
            torch.cuda.empty_cache()
            return 0
    below, above = fits(limit - 2 * 1024**3), fits(limit + 2 * 1024**3)
    print(f"pinned {free} {total} {props} {below} {above}", flush=True)
    sys.exit(0)
free, total = info()
sms = torch.cuda.get_device_properties(0).multi_processor_count
print(f"context {free} {total} {sms} {os.getpid()}", flush=True)
sys.stdin.readline()
a = torch.randn(1024, 1024, device="cuda")
(a @ a).sum().item()
torch.cuda.synchronize()
free, total = info()
print(f"cublas {free} {total}", flush=True)
sys.stdin.readline()
"""


def smi(query: str, gpu: int) -> list[str]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", str(gpu)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return [field.strip() for field in out.strip().split(",")]


def used_mib(gpu: int) -> int:
    time.sleep(SETTLE_S)
    return int(smi("memory.used", gpu)[0])


def compute_apps(gpu: int) -> str:
    done = subprocess.run(
        [
            "nvidia-smi",
            "--query-compute-apps=pid,process_name,used_memory",
            "--format=csv,noheader",
            "-i",
            str(gpu),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip()


class Worker:
    """One PyTorch process, stepped through its context and first matmul by the parent."""

    def __init__(
        self, python: str, worker: list[str], env: Mapping[str, str], mode: str, *extra: str
    ) -> None:
        self.proc = subprocess.Popen(
            [python, *worker, mode, *extra],
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def read(self, step: str) -> list[str]:
        assert self.proc.stdout is not None
        words = self.proc.stdout.readline().split()
        if not words or words[0] != step:
            self.stop()
            error = self.proc.stderr.read()[-2000:] if self.proc.stderr else ""
            raise RuntimeError(f"worker did not report {step}: {' '.join(words) or 'nothing'} {error}")
        return words[1:]

    def proceed(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.proceed()
            self.proceed()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _gib(value: str | int) -> float:
    return round(int(value) / 1024**3, 3)


class Measurement:
    def __init__(self, args: argparse.Namespace) -> None:
        self.gpu = args.gpu
        self.python = args.python
        self.worker = [args.worker] if args.worker else ["-c", WORKER]
        base = {**os.environ, "CUDA_VISIBLE_DEVICES": str(args.gpu), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        self.daemon = MpsDaemon(args.workdir / "mps", base)
        self.base_env = base
        self.workers: list[Worker] = []
        self.steps: list[dict[str, Any]] = []

    def start(self, env: Mapping[str, str], label: str) -> tuple[Worker, dict[str, Any]]:
        """A worker through its context and first matmul; the memory.used delta of each step."""
        before = used_mib(self.gpu)
        worker = Worker(self.python, self.worker, env, "measure")
        self.workers.append(worker)
        free, total, sms, pid = worker.read("context")
        context = used_mib(self.gpu)
        worker.proceed()
        worker.read("cublas")
        cublas = used_mib(self.gpu)
        step = {
            "label": label,
            "pid": int(pid),
            "context_mib": context - before,
            "cublas_mib": cublas - context,
            "mem_get_info_free_gib": _gib(free),
            "mem_get_info_total_gib": _gib(total),
            "sm_count": int(sms),
            "percentage": env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
        }
        self.steps.append(step)
        return worker, step

    def plain(self) -> dict[str, Any]:
        worker, step = self.start({**self.base_env, **self.daemon.client_env(False)}, "plain")
        worker.stop()
        self.workers.remove(worker)
        return step

    def clients(self, percentages: list[int]) -> dict[str, Any]:
        env = {**self.base_env, **self.daemon.client_env(True)}
        steps = []
        for index, share in enumerate(percentages):
            step = self.start(
                {**env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(share)}, f"client-{index}-{share}"
            )
            steps.append(step[1])
        pids = {f"{s['label']}": {s["pid"]} for s in steps}
        status = self.daemon.status(pids)
        return {"steps": steps, "status": status, "compute_apps": compute_apps(self.gpu)}

    def pinned(self, limit_gib: int) -> dict[str, Any]:
        limit = limit_gib * 1024**3
        env = {
            **self.base_env,
            **self.daemon.client_env(True),
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": f"0={limit_gib}G",
        }
        worker = Worker(self.python, self.worker, env, "pinned", str(limit))
        self.workers.append(worker)
        free, total, props, below, above = worker.read("pinned")
        return {
            "limit_gib": limit_gib,
            "mem_get_info_free_gib": _gib(free),
            "mem_get_info_total_gib": _gib(total),
            "device_properties_total_gib": _gib(props),
            "allocates_2_gib_under_the_limit": below == "1",
            "allocates_2_gib_over_the_limit": above == "1",
            "mem_get_info_reports_pinned_limit": abs(int(total) - limit) < 256 * MIB,
        }

    def stop_workers(self) -> None:
        for worker in reversed(self.workers):
            worker.stop()
        self.workers.clear()


def derive(clients: list[dict[str, Any]]) -> dict[str, Any]:
    """The MPS server and per-percentage client figures from the clients' steps, in start order. The first two
    clients must share a percentage: the server is the first's context step less the second's."""
    first, second = clients[0], clients[1]
    if first["percentage"] != second["percentage"]:
        raise ValueError("the first two clients must run at the same percentage to separate the MPS server")
    context: dict[int, list[int]] = {}
    cublas: dict[int, list[int]] = {}
    for index, step in enumerate(clients):
        share = int(step["percentage"])
        if index > 0:  # the first client's context step also holds the server
            context.setdefault(share, []).append(int(step["context_mib"]))
        cublas.setdefault(share, []).append(int(step["cublas_mib"]))
    return {
        "server_mib": int(first["context_mib"]) - int(second["context_mib"]),
        "client_context_mib": {p: max(v) for p, v in sorted(context.items(), reverse=True)},
        "client_cublas_mib": {p: max(v) for p, v in sorted(cublas.items(), reverse=True)},
        "sm_count_by_percentage": {int(s["percentage"]): s["sm_count"] for s in clients},
    }


def catalog_entry(result: Mapping[str, Any]) -> dict[str, Any]:
    """The colo/catalog/mps.yaml entry: the largest figure where a percentage was measured twice."""
    figures = result["mps"]["figures"]
    machine = result["machine"]
    return {
        "server_mib": figures["server_mib"],
        "client_context_mib": figures["client_context_mib"],
        "client_cublas_mib": figures["client_cublas_mib"],
        "client_sm_count": figures["sm_count_by_percentage"],
        "mem_get_info_reports_pinned_limit": result["pinned"]["mem_get_info_reports_pinned_limit"],
        "source": (
            f"measured {machine['date']} with bench/gpu/measure_mps.py on one {machine['gpu']} (driver "
            f"{machine['driver']}, PyTorch {machine['torch']}, MPS control {machine.get('mps_control') or 'n/a'}): "
            f"server = first client's context step less the second's; plain context {result['plain']['context_mib']} "
            f"MiB for comparison"
        ),
    }


def control_version(log_dir: Path) -> str | None:
    """The control daemon logs its binary version at startup ("CUDA MPS Control binary version: 13000")."""
    with contextlib.suppress(OSError):
        for line in (log_dir / "control.log").read_text().splitlines():
            if "binary version" in line:
                return line.rsplit(":", 1)[1].strip()
    return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    name, driver, total = smi("name,driver_version,memory.total", args.gpu)
    torch_version = subprocess.run(
        [args.python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.strip()
    result: dict[str, Any] = {
        "machine": {
            "gpu": name,
            "driver": driver,
            "nvidia_smi_total_mib": int(total),
            "torch": torch_version,
            "date": time.strftime("%Y-%m-%d"),
        }
    }
    measurement = Measurement(args)
    try:
        result["plain"] = measurement.plain()
        result["daemon_start"] = measurement.daemon.start()
        if not measurement.daemon.started:
            raise RuntimeError(f"the MPS control daemon did not start: {result['daemon_start']}")
        result["machine"]["mps_control"] = control_version(measurement.daemon.log_dir)
        clients = measurement.clients(args.percentages)
        result["mps"] = {**clients, "figures": derive(clients["steps"])}
        measurement.stop_workers()
        result["pinned"] = measurement.pinned(args.pinned_limit_gib)
        result["catalog_entry"] = catalog_entry(result)
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    except KeyboardInterrupt:  # SIGINT at the call's time limit: what was measured is still written
        result["error"] = "interrupted before the end"
    finally:
        measurement.stop_workers()
        if measurement.daemon.started:
            result["daemon_stop"] = measurement.daemon.stop()
        result["steps"] = measurement.steps
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/colo-mps-measure"))
    parser.add_argument(
        "--percentages", type=int, nargs="+", default=[100, 100, 50, 25], help="one client each, in order"
    )
    parser.add_argument("--pinned-limit-gib", type=int, default=16)
    parser.add_argument("--python", default=sys.executable, help="the interpreter with PyTorch")
    parser.add_argument("--worker", help="a worker script instead of the built-in one (tests)")
    args = parser.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 1 if "error" in result else 0


if __name__ == "__main__":
    raise SystemExit(main())
