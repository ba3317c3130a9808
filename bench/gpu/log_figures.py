"""Read the figures of a vLLM 0.22 startup log that `colo verify` does not compare: runner, graphs, profile.

Each pattern is the log call in vLLM 0.22.0 that prints it:
- `v1/worker/gpu_worker.py::init_device` "Using V2 Model Runner" (info_once; its absence: the V1 runner);
- `utils/mem_utils.py::MemoryProfilingResult.__repr__` (logged at DEBUG by `determine_available_memory`):
  "torch peak memory increase: A GiB; non-torch forward increase memory: N GiB; weights memory: W GiB";
- `gpu_worker.py::compile_or_warm_up_model` (DEBUG): "Actual usage is W GiB for weight, A GiB for peak
  activation, N GiB for non-torch memory, and G GiB for CUDAGraph memory";
- `v1/worker/gpu_model_runner.py` (V1): "Estimated CUDA graph memory: X GiB total", the progress bars
  "Capturing CUDA graphs (decode, FULL): ... n/N", "Graph capturing finished in S secs, took X GiB";
- `v1/worker/gpu/cudagraph_utils.py` (V2, DEBUG): one "CG Capture: mode=M, batch_desc=..." per graph;
- `gpu_worker.py`: "CUDA graph pool memory: X GiB (actual), Y GiB (estimated)";
- the engine's config line: `cudagraph_mode` and `cudagraph_capture_sizes` of its compilation config;
- `platforms/cuda.py` "Using FLASH_ATTN attention backend out of potential backends: [...]";
  `compilation/monitor.py` "torch.compile took S s in total".
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_NUM = r"(-?\d+(?:\.\d+)?)"
_PROFILE = re.compile(
    rf"torch peak memory increase: {_NUM} ?GiB; non-torch forward increase memory: {_NUM} ?GiB; "
    rf"weights memory: {_NUM} ?GiB"
)
_USAGE = re.compile(
    rf"Actual usage is {_NUM} GiB for weight, {_NUM} GiB for peak activation, {_NUM} GiB for non-torch "
    rf"memory, and {_NUM} GiB for CUDAGraph memory"
)
_GRAPH_ESTIMATE = re.compile(rf"Estimated CUDA graph memory: {_NUM} GiB total")
_GRAPH_POOL = re.compile(rf"CUDA graph pool memory: {_NUM} GiB \(actual\), {_NUM} GiB \(estimated\)")
_CAPTURED = re.compile(rf"Graph capturing finished in {_NUM} secs, took {_NUM} GiB")
_BAR = re.compile(r"Capturing CUDA graphs \(([^)]*)\):\s*\d+%\|[^|]*\|\s*(\d+)/(\d+)")
_CG_CAPTURE = re.compile(r"CG Capture: mode=(\w+), batch_desc=.*?num_tokens=(\d+)")
_MODE = re.compile(r"'cudagraph_mode': <?(?:CUDAGraphMode\.)?([A-Z_]+)")
_SIZES = re.compile(r"'cudagraph_capture_sizes': \[([\d, ]*)\]")
_BACKEND = re.compile(r"Using (\S+) attention backend")
_COMPILE = re.compile(rf"torch\.compile took {_NUM} s in total")
_KV = re.compile(rf"Available KV cache memory: {_NUM} GiB")
_INIT = re.compile(rf"init engine \(profile, create kv cache, warmup model\) took {_NUM} s")


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    found = list(pattern.finditer(text))
    return found[-1] if found else None


def _floats(match: re.Match[str] | None) -> tuple[float, ...] | None:
    return None if match is None else tuple(float(g) for g in match.groups())


def graph_counts(text: str) -> dict[str, int]:
    """Graphs captured per (phase, mode): V2's one DEBUG line per graph, else V1's progress bars' totals."""
    v2 = Counter(match.group(1) for match in _CG_CAPTURE.finditer(text))
    if v2:
        return dict(v2)
    totals: dict[str, int] = {}
    for match in _BAR.finditer(text.replace("\r", "\n")):
        totals[match.group(1)] = max(totals.get(match.group(1), 0), int(match.group(3)))
    return totals


def figures(text: str) -> dict[str, Any]:
    profile = _floats(_last(_PROFILE, text))
    usage = _floats(_last(_USAGE, text))
    pool = _floats(_last(_GRAPH_POOL, text))
    captured = _floats(_last(_CAPTURED, text))
    estimate = _floats(_last(_GRAPH_ESTIMATE, text))
    sizes = _last(_SIZES, text)
    mode = _last(_MODE, text)
    counts = graph_counts(text)
    v2_sizes = sorted({int(m.group(2)) for m in _CG_CAPTURE.finditer(text)})
    kv = _floats(_last(_KV, text))
    compile_s = _floats(_last(_COMPILE, text))
    init_s = _floats(_last(_INIT, text))
    backend = _last(_BACKEND, text)
    return {
        "runner": "V2" if "Using V2 Model Runner" in text else "V1",
        "attention_backend": backend.group(1) if backend else None,
        "profile_activation_gib": profile[0] if profile else None,
        "profile_non_torch_gib": profile[1] if profile else None,
        "profile_weights_gib": profile[2] if profile else None,
        "summary_weights_gib": usage[0] if usage else None,
        "summary_activation_gib": usage[1] if usage else None,
        "summary_non_torch_gib": usage[2] if usage else None,
        "summary_graph_gib": usage[3] if usage else None,
        "graph_estimate_gib": estimate[0] if estimate else (pool[1] if pool else None),
        "graph_pool_actual_gib": pool[0] if pool else None,
        "graph_captured_gib": captured[1] if captured else None,
        "graph_capture_s": captured[0] if captured else None,
        "graphs_by_mode": counts,
        "graphs": sum(counts.values()),
        "cudagraph_mode": mode.group(1) if mode else None,
        "capture_sizes": [int(s) for s in sizes.group(1).split(",") if s.strip()] if sizes else None,
        "captured_sizes_v2": v2_sizes or None,
        "kv_pool_gib": kv[0] if kv else None,
        "compile_s": compile_s[0] if compile_s else None,
        "init_engine_s": init_s[0] if init_s else None,
    }


# vLLM's multiprocessing workers prefix every line they print with their process name: "(Worker_TP1 pid=4242) "
# (`v1/executor/multiproc_executor.py::WorkerProc.worker_main` names it Worker[_DP..][_PP..][_PCP..]_TP<rank>..,
# and `utils/system_utils.py::decorate_logs` adds the prefix).
_RANK = re.compile(r"\(Worker(?:_[A-Z]+\d+)*?_TP(\d+)(?:_[A-Z]+\d+)* pid=\d+\)")


def rank_texts(text: str) -> dict[int, str]:
    """Each tensor-parallel rank's own lines of a log, by rank; empty for a server of one process."""
    lines: dict[int, list[str]] = {}
    for line in text.splitlines():
        found = _RANK.search(line)
        if found:
            lines.setdefault(int(found.group(1)), []).append(line)
    return {rank: "\n".join(lines[rank]) for rank in sorted(lines)}


def rank_figures(text: str) -> dict[str, dict[str, Any]]:
    """The figures each rank logged (its profile, its KV memory, its graphs), by "rank<k>"."""
    return {f"rank{rank}": figures(part) for rank, part in rank_texts(text).items()}
