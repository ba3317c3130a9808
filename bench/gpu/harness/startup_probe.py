"""Where a vLLM server's startup memory goes, read from inside its engine process (GPU machine side).

vLLM logs three sums (weights, "torch peak memory increase", "non-torch forward increase memory"); this probe
records what makes them up without changing any of them. Installed by `probe_site/sitecustomize.py` when
`COLO_PROBE_OUT` names a file stem, it wraps, as each module is imported, the worker's and the model runners'
startup methods (vLLM 0.22's V1 `gpu_model_runner.py` and V2 `gpu/model_runner.py`) and writes after every
wrapped call:

* per call, on entry and exit: PyTorch's allocated, reserved and peak bytes (the peak is read, never reset:
  vLLM's own figure depends on it), the device's free memory, what lies outside PyTorch's allocator
  (`total - free - reserved`, what vLLM calls non-torch memory), the CUDA context's stack-size limit (the
  driver raises it, and with it the local memory it reserves for every resident thread, when a kernel needs a
  larger frame), and the threads and CUDA streams that exist;
* every CUDA stream and thread created in the process, with the code that created it;
* for each `profile_run`, PyTorch's allocation trace (`torch.cuda.memory._record_memory_history`) replayed:
  the peak above the run's start, the allocations alive at that peak grouped by the vLLM (or Triton, Inductor)
  line that made them, what was still allocated at the end, and the most that benchmarking buffers
  (Triton's `do_bench`, Inductor's benchmarker: the cold-compile suspects) held at once.
* once the server serves (after the worker's `compile_or_warm_up_model`), after every `execute_model` step: the
  most PyTorch reserved, held allocated between steps, left cached but unused (inactive split blocks: what a
  step of another shape could not reuse) and what lay outside its allocator, each with the step's scheduled
  tokens and the reading it came from, so growth under load is told apart from the startup peak.

Standard library and PyTorch only; vLLM is never imported by the probe itself.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

MIB = 1024**2
CALLS_KEPT = 4  # calls recorded per method outside profile_run (capture_model runs _dummy_run per size)
TRACE_ENTRIES = 400_000  # allocation events kept by the recorder (a ring buffer)
TOP_SITES = 40
# Frames that say which code made an allocation, innermost first; the first match names the site.
SITE_MARKERS = ("/vllm/", "/triton/", "/torch/_inductor/", "/flashinfer/")
BENCHMARK_MARKERS = ("triton/testing.py", "_inductor/runtime/benchmarking.py", "triton/runtime/autotuner.py")
CU_LIMIT_STACK_SIZE = 0

# The startup steps of either model runner (V1's module up to 0.33, V2's), wrapped under the same names.
RUNNER_METHODS = (
    "load_model",
    "profile_run",
    "_dummy_run",
    "_dummy_sampler_run",
    "_dummy_pooler_run",
    "profile_cudagraph_memory",
    "capture_model",
)
# module -> class -> methods wrapped (names absent from a release are skipped)
TARGETS: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm.v1.worker.gpu_worker": {
        "Worker": (
            "init_device",
            "load_model",
            "determine_available_memory",
            "initialize_from_config",
            "compile_or_warm_up_model",
        )
    },
    "vllm.v1.worker.gpu_model_runner": {"GPUModelRunner": (*RUNNER_METHODS, "execute_model")},
    "vllm.v1.worker.gpu.model_runner": {"GPUModelRunner": (*RUNNER_METHODS, "execute_model")},
}
# Methods read as serving steps, not startup calls: counted into Recorder.serving, never kept as events.
SERVING_METHODS = ("execute_model",)
# The startup call after which every step serves requests (warm-up and graph capture are done).
SERVING_AFTER = "compile_or_warm_up_model"
SERVING_WRITE_S = 2.0  # write the serving maxima at most this often


class Recorder:
    """Everything the probe saw in this process, written to `<stem>-<pid>.json` after each wrapped call."""

    def __init__(self, stem: str) -> None:
        self.path = Path(f"{stem}-{os.getpid()}.json")
        self.t0 = time.monotonic()
        self.events: list[dict[str, Any]] = []
        self.streams: list[dict[str, Any]] = []
        self.threads: list[dict[str, Any]] = []
        self.profiles: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.depth = 0
        self.in_profile = 0
        self.lock = threading.Lock()
        self._libcuda: Any = None
        self.watch: Callable[[Recorder], None] | None = None
        self.watching = False
        self.serving_from: float | None = None  # set once the worker has warmed up
        self.serving: dict[str, Any] = {"steps": 0}
        self._serving_written = 0.0

    # -- readings --------------------------------------------------------------------------------------
    def stack_limit(self) -> int | None:
        """The current context's CU_LIMIT_STACK_SIZE (bytes per thread), or None where libcuda is absent."""
        try:
            if self._libcuda is None:
                self._libcuda = ctypes.CDLL("libcuda.so.1")
            value = ctypes.c_size_t(0)
            status = self._libcuda.cuCtxGetLimit(ctypes.byref(value), CU_LIMIT_STACK_SIZE)
            return int(value.value) if status == 0 else None
        except OSError:
            return None

    def reading(self) -> dict[str, Any]:
        import torch

        if not torch.cuda.is_initialized():
            return {"cuda": "not initialized"}
        free, total = torch.cuda.mem_get_info()
        stats = torch.cuda.memory_stats()
        reserved = int(stats.get("reserved_bytes.all.current", 0))
        return {
            "allocated_mib": round(stats.get("allocated_bytes.all.current", 0) / MIB, 2),
            "peak_mib": round(stats.get("allocated_bytes.all.peak", 0) / MIB, 2),
            "reserved_mib": round(reserved / MIB, 2),
            "free_mib": round(free / MIB, 2),
            "outside_torch_mib": round((total - free - reserved) / MIB, 2),
            "stack_limit_bytes": self.stack_limit(),
            "threads": threading.active_count(),
            "streams_created": len(self.streams),
        }

    def event(self, name: str, phase: str, **extra: Any) -> None:
        with self.lock:
            self.events.append(
                {
                    "t": round(time.monotonic() - self.t0, 3),
                    "call": name,
                    "phase": phase,
                    "thread": threading.current_thread().name,
                    **self.reading(),
                    **extra,
                }
            )

    def serving_reading(self) -> dict[str, float]:
        """What one serving step leaves: PyTorch's reserved, allocated and cached-but-unused bytes, and what lies
        outside its allocator (MiB)."""
        import torch

        free, total = torch.cuda.mem_get_info()
        stats = torch.cuda.memory_stats()
        reserved = int(stats.get("reserved_bytes.all.current", 0))
        return {
            "reserved_mib": round(reserved / MIB, 2),
            "allocated_mib": round(stats.get("allocated_bytes.all.current", 0) / MIB, 2),
            "inactive_split_mib": round(stats.get("inactive_split_bytes.all.current", 0) / MIB, 2),
            "outside_torch_mib": round((total - free - reserved) / MIB, 2),
        }

    def serving_step(self, tokens: int | None) -> None:
        """Fold one serving step into the maxima (each with the step's tokens and its whole reading)."""
        reading = self.serving_reading()
        with self.lock:
            serving = self.serving
            serving["steps"] += 1
            if "first" not in serving:
                serving["first"] = {"tokens": tokens, **reading}
            for key, value in reading.items():
                best = serving.get(f"max_{key}")
                if best is None or value > best[key]:
                    serving[f"max_{key}"] = {"tokens": tokens, "step": serving["steps"], **reading}
            if tokens is not None:
                serving["max_tokens"] = max(int(serving.get("max_tokens", 0)), tokens)
            due = time.monotonic() - self._serving_written >= SERVING_WRITE_S
        if due:
            self._serving_written = time.monotonic()
            self.write()

    def write(self) -> None:
        data = {
            "pid": os.getpid(),
            "events": self.events,
            "streams": self.streams,
            "threads": self.threads,
            "profiles": self.profiles,
            "serving": self.serving,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(self.path)

    # -- wrapping ----------------------------------------------------------------------------------------
    def wrap(self, owner: type, method: str) -> None:
        original = owner.__dict__.get(method)
        if original is None or getattr(original, "_colo_probe", False):
            return
        if method in SERVING_METHODS:
            self._wrap_serving(owner, method, original)
            return
        name = f"{owner.__module__.rsplit('.', 1)[-1]}.{owner.__name__}.{method}"
        profile = method == "profile_run"

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            kept = self.calls[name] <= CALLS_KEPT or self.in_profile > 0
            if kept:
                self.event(name, "enter", call_index=self.calls[name])
            if profile:
                self.in_profile += 1
                start_recording()
            try:
                return original(*args, **kwargs)
            finally:
                if profile:
                    self.in_profile -= 1
                    self.profiles.append({"call": name, **stop_recording()})
                if kept:
                    self.event(name, "exit", call_index=self.calls[name])
                    self.write()
                if method == SERVING_AFTER and self.serving_from is None:
                    self.serving_from = time.monotonic() - self.t0

        wrapper._colo_probe = True  # type: ignore[attr-defined]
        setattr(owner, method, wrapper)

    def _wrap_serving(self, owner: type, method: str, original: Callable[..., Any]) -> None:
        """A serving step: untouched until the worker has warmed up (warm-up and capture run it too), then
        folded into `serving` after it returns."""

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self.serving_from is not None:
                scheduled = args[1] if len(args) > 1 else kwargs.get("scheduler_output")
                tokens = getattr(scheduled, "total_num_scheduled_tokens", None)
                self.serving_step(tokens if isinstance(tokens, int) else None)
            return result

        wrapper._colo_probe = True  # type: ignore[attr-defined]
        setattr(owner, method, wrapper)

    def patch_module(self, module: ModuleType) -> None:
        if not self.watching and self.watch is not None:  # torch is imported by now: vLLM's modules import it
            self.watching = True
            self.watch(self)
        for class_name, methods in TARGETS.get(module.__name__, {}).items():
            owner = getattr(module, class_name, None)
            if isinstance(owner, type):
                for method in methods:
                    self.wrap(owner, method)


def _caller(skip: int = 2, depth: int = 4) -> list[str]:
    frames = traceback.extract_stack()[:-skip][-depth:]
    return [
        f"{f.filename.rsplit('/', 2)[-1] if '/' in f.filename else f.filename}:{f.lineno}:{f.name}"
        for f in frames
    ]


def watch_streams_and_threads(recorder: Recorder) -> None:
    """Record every torch.cuda.Stream and threading.Thread created from now on, with who created it."""
    import torch

    stream_class = torch.cuda.Stream
    original_new = stream_class.__new__

    def new_stream(cls: type, *args: Any, **kwargs: Any) -> Any:
        recorder.streams.append(
            {
                "t": round(time.monotonic() - recorder.t0, 3),
                "thread": threading.current_thread().name,
                "by": _caller(),
            }
        )
        return original_new(cls, *args, **kwargs)

    stream_class.__new__ = new_stream
    original_start = threading.Thread.start

    def start_thread(thread: threading.Thread, /) -> None:
        target = getattr(thread, "_target", None)
        recorder.threads.append(
            {
                "t": round(time.monotonic() - recorder.t0, 3),
                "name": thread.name,
                "target": getattr(target, "__qualname__", repr(target)),
                "by": _caller(),
            }
        )
        original_start(thread)

    threading.Thread.start = start_thread  # type: ignore[method-assign,assignment]


# -- the allocation trace of one profile_run --------------------------------------------------------------
def start_recording() -> None:
    import torch

    torch.cuda.memory._record_memory_history(
        enabled="all", context="alloc", stacks="python", max_entries=TRACE_ENTRIES
    )


def stop_recording() -> dict[str, Any]:
    import torch

    try:
        snapshot = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    device = torch.cuda.current_device()
    traces = snapshot.get("device_traces") or []
    return replay(traces[device] if device < len(traces) else [])


def _site(frames: Sequence[Mapping[str, Any]]) -> str:
    """The innermost frame in vLLM, Triton, Inductor or FlashInfer code (else the innermost frame)."""
    for frame in frames:
        filename = str(frame.get("filename", ""))
        for marker in SITE_MARKERS:
            if marker in filename:  # from the package's own folder on: vllm/..., triton/...
                short = filename[filename.index(marker) + 1 :]
                return f"{short}:{frame.get('line')}:{frame.get('name')}"
    if frames:
        return f"{frames[0].get('filename')}:{frames[0].get('line')}:{frames[0].get('name')}"
    return "<no frames>"


def _benchmarking(frames: Iterable[Mapping[str, Any]]) -> bool:
    return any(any(m in str(f.get("filename", "")) for m in BENCHMARK_MARKERS) for f in frames)


def replay(trace: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Live bytes over the trace (allocations minus completed frees, from the run's start), its peak, what was
    alive at the peak by site, what stayed allocated at the end, and the most benchmarking buffers held."""
    live: dict[int, tuple[int, str, bool]] = {}
    total = peak = bench = bench_peak = 0
    peak_live: dict[int, tuple[int, str, bool]] = {}
    dropped = 0
    for entry in trace:
        action = entry.get("action")
        addr = int(entry.get("addr", 0))
        size = int(entry.get("size", 0))
        if action == "alloc":
            frames = entry.get("frames") or []
            benchmark = _benchmarking(frames)
            live[addr] = (size, _site(frames), benchmark)
            total += size
            bench += size if benchmark else 0
            bench_peak = max(bench_peak, bench)
            if total > peak:
                peak, peak_live = total, dict(live)
        elif action == "free_completed":
            known = live.pop(addr, None)
            if known is None:  # allocated before the recording started (or dropped from the ring)
                dropped += 1
                continue
            total -= known[0]
            bench -= known[0] if known[2] else 0

    def by_site(items: Iterable[tuple[int, str, bool]]) -> list[dict[str, Any]]:
        sizes: defaultdict[str, int] = defaultdict(int)
        counts: Counter[str] = Counter()
        for size, site, _ in items:
            sizes[site] += size
            counts[site] += 1
        ranked = sorted(sizes.items(), key=lambda kv: -kv[1])[:TOP_SITES]
        return [{"site": s, "mib": round(b / MIB, 2), "count": counts[s]} for s, b in ranked]

    return {
        "events": len(trace),
        "frees_of_earlier_blocks": dropped,
        "peak_increase_mib": round(peak / MIB, 2),
        "at_peak": by_site(peak_live.values()),
        "still_allocated_mib": round(total / MIB, 2),
        "still_allocated": by_site(live.values()),
        "benchmark_buffers_peak_mib": round(bench_peak / MIB, 2),
    }


# -- installation -------------------------------------------------------------------------------------------
class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        self.recorder.patch_module(module)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    """Finds the target modules through the other finders and patches them once they have executed."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in TARGETS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, self.recorder)
                return spec
        return None


_installed: Recorder | None = None


def install(stem: str, *, watch: Callable[[Recorder], None] = watch_streams_and_threads) -> Recorder:
    """Patch the target modules when (or if already) imported; idempotent within a process."""
    global _installed
    if _installed is not None:
        return _installed
    recorder = Recorder(stem)
    recorder.watch = watch  # on the first patch: importing torch here, at interpreter start, would run it
    sys.meta_path.insert(0, _PatchingFinder(recorder))  # before vLLM has set its environment
    for name in TARGETS:
        module = sys.modules.get(name)
        if module is not None:
            recorder.patch_module(module)
    _installed = recorder
    return recorder
