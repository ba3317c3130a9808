"""What nvidia-smi says about the GPUs: one snapshot each, or samples taken in the background during a load."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

GPU_FIELDS = ("index", "name", "driver_version", "memory.total", "memory.used", "memory.free")
APP_FIELDS = ("pid", "process_name", "used_memory")


def _query(args: list[str], timeout_s: float = 20.0) -> str:
    return subprocess.run(
        ["nvidia-smi", *args], capture_output=True, text=True, check=True, timeout=timeout_s
    ).stdout


def _rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split(",")] for line in text.strip().splitlines() if line.strip()]


def snapshot(gpu: int = 0) -> dict[str, Any]:
    """The GPU's memory in MiB, every compute process's, and nvidia-smi's own table as it printed it."""
    gpu_row = _rows(
        _query([f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits", "-i", str(gpu)])
    )[0]
    apps = _rows(
        _query(
            [f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv,noheader,nounits", "-i", str(gpu)]
        )
    )
    return {
        "time": time.time(),
        "gpu": dict(zip(GPU_FIELDS, gpu_row, strict=True)),
        "used_mib": int(gpu_row[4]),
        "free_mib": int(gpu_row[5]),
        "apps": [{"pid": int(a[0]), "name": a[1], "used_mib": int(a[2])} for a in apps if len(a) == 3],
        "table": _query(["-i", str(gpu)]),
    }


def snapshots(gpus: list[int]) -> dict[int, dict[str, Any]]:
    """A snapshot of each GPU, by its index."""
    return {gpu: snapshot(gpu) for gpu in gpus}


@dataclass
class Sampler:
    """Samples used/free MiB every `interval_s` until stopped; keeps the lowest free seen. With `gpus`, every GPU
    listed is sampled, and `samples` keeps the first one's."""

    gpu: int = 0
    interval_s: float = 0.5
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds since start, used, free)
    gpus: tuple[int, ...] = ()
    per_gpu: dict[int, list[tuple[float, int, int]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        start = time.monotonic()
        gpus = self.gpus or (self.gpu,)
        fields = (
            "--query-gpu=index,memory.used,memory.free"
            if self.gpus
            else "--query-gpu=memory.used,memory.free"
        )
        query = [fields, "--format=csv,noheader,nounits", "-i", ",".join(map(str, gpus))]
        while not self._stop.is_set():
            try:
                rows = _rows(_query(query, timeout_s=5.0))
                now = round(time.monotonic() - start, 2)
                if self.gpus:
                    for index, used, free in ((int(a), int(b), int(c)) for a, b, c in rows):
                        self.per_gpu.setdefault(index, []).append((now, used, free))
                    first = self.per_gpu.get(gpus[0], [])
                    if first:
                        self.samples.append(first[-1])
                else:
                    used, free = (int(v) for v in rows[0])
                    self.samples.append((now, used, free))
            except (subprocess.SubprocessError, ValueError, IndexError, OSError):
                pass
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {"samples": 0}
        out: dict[str, Any] = {
            "samples": len(self.samples),
            "max_used_mib": max(s[1] for s in self.samples),
            "min_free_mib": min(s[2] for s in self.samples),
            "series": self.samples,
        }
        if self.per_gpu:
            out["per_gpu"] = {
                str(gpu): {
                    "max_used_mib": max(s[1] for s in series),
                    "min_free_mib": min(s[2] for s in series),
                    "series": series,
                }
                for gpu, series in sorted(self.per_gpu.items())
            }
        return out
