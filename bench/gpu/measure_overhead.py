"""Measure the memory one process holds on a GPU outside any vLLM budget, and two processes side by side.

Each worker process is started with CUDA_VISIBLE_DEVICES set to one GPU (as a container sees one device),
creates its CUDA context (`torch.zeros(1, device="cuda")`), then a cuBLAS handle and workspace (the first
matmul), and reports the GPU's used memory from nvidia-smi after each step. A second worker then does the
same on the same GPU while the first is still alive, so the per-process cost of two co-located servers can
be read off directly.

Run on a machine with NVIDIA GPUs and PyTorch: python3 bench/gpu/measure_overhead.py [--gpu 0] [--out FILE]
The budget uses the result as the GPU catalog's `context_mib` (colo/catalog/gpus.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

MIB = 1024**2

WORKER = r"""
import sys, time, torch
def report(step):
    free, total = torch.cuda.mem_get_info()
    print(f"{step} {free} {total} {torch.cuda.memory_reserved()}", flush=True)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
report("context")
sys.stdin.readline()  # the parent reads nvidia-smi before the next step
a = torch.randn(1024, 1024, device="cuda")
(a @ a).sum().item()
torch.cuda.synchronize()
report("cublas")
print("uuid", torch.cuda.get_device_properties(0).uuid, flush=True)
sys.stdin.readline()  # stay alive until the parent has measured
"""


def smi(query: str, gpu: int) -> list[str]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", str(gpu)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [field.strip() for field in out.strip().split(",")]


def used_mib(gpu: int) -> int:
    return int(smi("memory.used", gpu)[0])


class Worker:
    def __init__(self, gpu: int) -> None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), CUDA_DEVICE_ORDER="PCI_BUS_ID")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.steps: dict[str, Any] = {}

    def read_step(self) -> tuple[str, list[str]]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line:
            raise RuntimeError("worker exited early")
        return line[0], line[1:]

    def proceed(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        self.proceed()
        self.proc.wait(timeout=60)


def measure(gpu: int) -> dict[str, Any]:
    name, driver, total_mib = smi("name,driver_version,memory.total", gpu)
    import torch  # only on the GPU machine

    result: dict[str, Any] = {
        "gpu": name,
        "driver": driver,
        "nvidia_smi_total_mib": int(total_mib),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "index": gpu,
        "used_before_mib": used_mib(gpu),
    }
    first = Worker(gpu)
    for step_index in range(2):
        step, (_free, total, reserved) = first.read_step()
        time.sleep(0.5)  # nvidia-smi samples; let it settle
        result[f"one_{step}_used_mib"] = used_mib(gpu)
        result[f"one_{step}_torch_reserved_mib"] = int(reserved) / MIB
        result["mem_get_info_total_gib"] = round(int(total) / 1024**3, 2)
        if step_index == 0:
            first.proceed()
    result["uuid_seen_by_torch"] = first.read_step()[1][0]
    second = Worker(gpu)
    second.read_step()
    second.proceed()
    second.read_step()
    second.read_step()
    time.sleep(0.5)
    result["two_processes_used_mib"] = used_mib(gpu)
    first.stop()
    second.stop()
    base = result["used_before_mib"]
    result["context_mib"] = result["one_context_used_mib"] - base
    result["cublas_mib"] = result["one_cublas_used_mib"] - result["one_context_used_mib"]
    result["per_process_mib"] = (result["two_processes_used_mib"] - base) / 2
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpu", type=int, action="append", help="GPU index (repeatable); default all")
    parser.add_argument("--out", help="write the JSON here as well")
    args = parser.parse_args()
    count = len(
        subprocess.run(["nvidia-smi", "-L"], check=True, capture_output=True, text=True).stdout.splitlines()
    )
    results = [measure(g) for g in (args.gpu or range(count))]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
