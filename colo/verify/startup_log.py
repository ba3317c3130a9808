"""Read the figures one vLLM process logs at startup, in the wording of every release colo mirrors.

Each pattern below is the logger call of the releases that print it (vLLM 0.10.1.1 to 0.34.0):

- weights: `gpu_model_runner.py::load_model` "Model loading took %.4f GiB and %.6f seconds" (<= 0.11),
  "... took %s GiB memory and ..." (0.12+; the V2 runner drops "memory" in 0.14-0.27);
- KV pool: `gpu_worker.py::determine_available_memory` "Available KV cache memory: %.2f GiB" (%s from 0.14),
  or, with --kv-cache-memory-bytes, "... reserved X GiB memory for KV Cache as specified by ...";
- capacity: `kv_cache_utils.py` "GPU KV cache size: %s tokens" and "Maximum concurrency for %s tokens per
  request: %.2fx" on two lines up to 0.27, one line joined by ", " from 0.28, whose first word is the device
  type from 0.30 ("GPU" on CUDA);
- graphs: "Graph capturing finished in %.0f secs, took %.2f GiB", "Estimated CUDA graph memory: %.2f GiB
  total" (0.18+), "CUDA graph pool memory: X GiB (actual), Y GiB (estimated)" (0.18+);
- the summary `compile_or_warm_up_model` logs (INFO in 0.10.2 and 0.26+, DEBUG between): "Free memory on
  device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB). Actual usage is W GiB for
  weight, A GiB for peak activation, N GiB for non-torch memory, and G GiB for CUDAGraph memory" up to
  0.26; from 0.27 "C GiB for consumed memory (weights + non-torch), A GiB for peak activation, and G GiB
  for CUDAGraph memory"; it ends with "Current kv cache memory in use is K bytes" (0.10.2) or "K GiB";
- errors: `request_memory` "Free memory on device [cuda:0] (F/T GiB) on startup is less than desired GPU
  memory utilization (u, R GiB)" (the device is named from 0.14); `_check_enough_kv_cache_memory` "No
  available memory for the cache blocks" and "To serve at least one request with the model's max seq len
  (L), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB)"; a CUDA
  out-of-memory error (PyTorch's "CUDA out of memory", or "CUDA error: out of memory" from a kernel); any
  other exception a worker or the engine core logs before serving ("Traceback ..." ending in "XError: ...");
  "EngineCore failed to start". The phase a failure struck in is the deepest startup step its traceback names
  (`gpu_worker.py::compile_or_warm_up_model` runs kernel warm-up, `capture_model` and the sampler's
  `_dummy_sampler_run` after the KV cache is allocated, so a failure there comes after the KV figures).

- vLLM 0.34's extensible KV cache (on by default on CUDA; v1/worker/extensible_kv_cache.py), which sizes the KV
  cache after warm-up and graph capture from measured memory. "Available KV cache memory" is then only the
  profiled capacity the address range is reserved for; the pool is what follows:
  `measure_kv_cache_blocks` "Memory after warmup: F GiB free, C GiB committed to the KV cache, K GiB kept for
  transient activations (P GiB allocated at peak, G GiB of torch reservation growth); N KV cache blocks (B GiB)
  fit within the requested R GiB. Torch may reserve up to T GiB." (one per rank); its warning
  "gpu_memory_utilization=u caps this instance at R GiB, keeping W GiB of free device memory out of the KV
  cache. ..."; `extend_kv_cache` "Remapping the KV cache from A to B blocks to fit the measured budget." and
  "Extended KV cache to N blocks (X GiB)." (the blocks every rank commits, X with the driver's granule
  rounding); v1/executor/abstract.py::disable_extensible_kv_cache "Disabling the extensible KV cache: <why>.
  The KV cache will be sized from profiling estimates instead of measured memory." and
  config/vllm.py::_resolve_extensible_kv_cache "Extensible KV cache off: without an IMEX channel, ...". A KV
  cache too small for one request fails after warm-up with the same "To serve at least one request" error
  (v1/core/kv_cache_planning.py::shrink_kv_cache_configs). Every other line above keeps its 0.33 wording in
  0.34 (the V2 runner, the only one left, logs "Model loading took %s GiB memory"; the summary line is still
  printed, before the measured sizing, its "kv cache memory in use" the profiled figure).

- whether torch.compile ran on an empty compile cache: "Compiling a graph for compile range %s takes %.2f s"
  (cold) or "Directly load the compiled graph(s) for compile range %s from the cache" (warm),
  compilation/backends.py in 0.22.0-0.34.0. A cold start's activation peak, and a model without a KV cache's
  capture, hold the compiler's scratch, which colo's plan (a warm start's) does not.

A tensor-parallel run logs the per-rank lines once per rank: weights and graphs keep the largest rank's
figure, the KV pool the smallest (vLLM sizes every rank to the smallest pool).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

_NUM = r"(-?\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"
GIB = 1024**3

_VERSION = [
    re.compile(r"vLLM API server version (\d+\.\d+[^\s]*)"),
    # entrypoints/common/startup.py::log_version_and_model without its logo (VLLM_DISABLE_LOG_LOGO, or a logger
    # without a formatter), 0.20+
    re.compile(r"vLLM server version (\d+\.\d+[^\s,]*), serving model"),
    re.compile(r"Initializing a V1 LLM engine \(v(\d+\.\d+[^)\s]*)\)"),
    re.compile(r"█\s+version (\d+\.\d+[^\s]*)"),
]
_WEIGHTS = re.compile(rf"Model loading took:? {_NUM} (GiB|GB)")
_KV_POOL = re.compile(rf"Available KV cache memory: {_NUM} GiB")
_KV_RESERVED = re.compile(rf"reserved {_NUM} ?GiB memory for KV Cache")
_KV_TOKENS = re.compile(rf"\b([A-Z]+) KV cache size: {_INT} tokens")
_CONCURRENCY = re.compile(rf"Maximum concurrency for {_INT} tokens per request: {_NUM}x")
_GRAPHS = re.compile(rf"Graph capturing finished in \d+ secs, took {_NUM} GiB")
_GRAPH_ESTIMATE = re.compile(rf"Estimated CUDA graph memory: {_NUM} GiB total")
_GRAPH_POOL = re.compile(rf"CUDA graph pool memory: {_NUM} GiB \(actual\), {_NUM} GiB \(estimated\)")
_BLOCKS = re.compile(r"num_gpu_blocks is: (\d+)")
_SUMMARY_HEAD = re.compile(
    rf"Free memory on device \({_NUM}/{_NUM} GiB\) on startup\. Desired GPU memory utilization is "
    rf"\({_NUM}, {_NUM} GiB\)"
)
_USAGE_OLD = re.compile(
    rf"{_NUM} GiB for weight, {_NUM} GiB for peak activation, {_NUM} GiB for non-torch memory, and "
    rf"{_NUM} GiB for CUDAGraph memory"
)
_USAGE_CONSUMED = re.compile(
    rf"{_NUM} GiB for consumed memory \(weights \+ non-torch\), {_NUM} GiB for peak activation, and "
    rf"{_NUM} GiB for CUDAGraph memory"
)
_KV_IN_USE = re.compile(rf"Current kv cache memory in use is {_NUM} (GiB|bytes)")
_FREE_ERROR = re.compile(
    rf"Free memory on device(?: (\S+))? \({_NUM}/{_NUM} GiB\) on startup\s+is\s+less\s+than\s+desired\s+GPU\s+"
    rf"memory\s+utilization\s+\({_NUM}, {_NUM} GiB\)"
)
_KV_TOO_SMALL = re.compile(
    rf"To serve at least one request with the models?'s? max seq len \((\d+)\), \(?{_NUM} (?:GiB|GB) KV cache "
    rf"is needed, which is larger than the available KV cache memory \({_NUM} (?:GiB|GB)\)"
)
_NO_KV = re.compile(r"No available memory for the cache blocks")
# vLLM 0.34 v1/worker/extensible_kv_cache.py::measure_kv_cache_blocks (logger.info, every rank)
_MEASURED_KV = re.compile(
    rf"Memory after warmup: {_NUM} GiB free, {_NUM} GiB committed to the KV cache, {_NUM} GiB kept for "
    rf"transient activations \({_NUM} GiB allocated at peak, {_NUM} GiB of torch reservation growth\); "
    rf"{_INT} KV cache blocks \({_NUM} GiB\) fit within the requested {_NUM} GiB\. Torch may reserve up to "
    rf"{_NUM} GiB"
)
# ... its logger.warning_once when 0.7 < gpu_memory_utilization < 1.0 withholds at least 1 GiB
_UTILIZATION_CAP = re.compile(
    rf"gpu_memory_utilization={_NUM} caps this instance at {_NUM} GiB, keeping {_NUM} GiB of free device "
    r"memory out of the KV cache"
)
# ... extend_kv_cache (logger.info)
_REMAPPED = re.compile(rf"Remapping the KV cache from {_INT} to {_INT} blocks to fit the measured budget")
_EXTENDED = re.compile(rf"Extended KV cache to {_INT} blocks \({_NUM} GiB\)")
# v1/executor/abstract.py::disable_extensible_kv_cache (warning); config/vllm.py (info, no IMEX channel)
_EXTENSIBLE_DISABLED = re.compile(
    r"Disabling the extensible KV cache: (.*?)\. The KV cache will be sized from profiling estimates"
)
_EXTENSIBLE_OFF_IMEX = re.compile(r"Extensible KV cache off: (without an IMEX channel)")
_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory")
# The last exception line of a traceback, with or without vLLM's "(Worker pid=..) ERROR ... [file:line] " prefix.
_EXCEPTION = re.compile(r"^(?:.*?\] )?((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)): (.*)$", re.M)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
# Startup steps by the functions a traceback runs through, the latest step first; the KV cache is sized and
# allocated before every step marked True (EngineCore._initialize_kv_caches, then compile_or_warm_up_model).
PHASES = (
    (re.compile(r"_dummy_sampler_run|_dummy_pooler_run|warmup_kernels"), "the sampler warm-up", True),
    (
        re.compile(r"capture_model|_capture_cudagraphs|graph_capture|capture_end|capture_begin"),
        "CUDA graph capture",
        True,
    ),
    (re.compile(r"kernel_warmup|flashinfer_autotune|deep_gemm_warmup"), "the kernel warm-up", True),
    # vLLM 0.34: sizing the extensible KV cache from what warm-up left (measure_kv_cache_blocks runs inside
    # compile_or_warm_up_model; the engine then shrinks and commits it): the pool was never settled
    (
        re.compile(
            r"measure_kv_cache_blocks|finalize_extensible_kv_cache|shrink_kv_cache_configs|extend_kv_cache"
        ),
        "sizing the KV cache after warm-up",
        False,
    ),
    (re.compile(r"compile_or_warm_up_model"), "the warm-up after the KV cache", True),
    (
        re.compile(r"initialize_kv_cache|_allocate_kv_cache_tensors|initialize_from_config"),
        "KV cache allocation",
        False,
    ),
    (
        re.compile(r"profile_run|determine_available_memory|profile_cudagraph_memory"),
        "memory profiling",
        False,
    ),
    (re.compile(r"load_model|load_weights"), "weight loading", False),
)
_ENGINE_FAILED = re.compile(r"EngineCore failed to start|Engine core initialization failed")
# uvicorn's line once the API server answers (every release's `vllm serve`): what fails after it failed
# while serving, not at startup
_SERVING = re.compile(r"Application startup complete")
# A hybrid model's block size, as the engine raised it so that one attention page holds a state page: vLLM
# 0.33.0 platforms/interface.py::Platform._align_hybrid_block_size logs "Setting attention block size to %d
# tokens to ensure that attention page size is >= mamba page size." (also "... so the quantized primary KV
# page covers ..." where skipped layers pad it further); the last one logged is the size the engine runs.
_ATTENTION_BLOCK = re.compile(r"Setting attention block size to (\d+) tokens")
_COMPILED_COLD = re.compile(r"Compiling a graph for (?:compile range|dynamic shape|general shape)")
_COMPILED_WARM = re.compile(r"Directly load the compiled graph\(s\) for ")

ErrorKind = Literal[
    "free_memory", "kv_too_small", "no_kv_memory", "out_of_memory", "exception", "engine_failed"
]


@dataclass(frozen=True)
class StartupSummary:
    """The line `compile_or_warm_up_model` logs once the process is ready (one rank's)."""

    free_gib: float
    total_gib: float
    utilization: float
    requested_gib: float
    weights_gib: float | None  # up to 0.26
    non_torch_gib: float | None  # up to 0.26
    consumed_gib: float | None  # from 0.27: weights + non-torch, measured as free memory taken
    activation_gib: float | None
    graph_gib: float | None
    kv_in_use_gib: float | None


@dataclass(frozen=True)
class MeasuredKv:
    """What vLLM 0.34's extensible KV cache measured after warm-up and committed (the smallest rank's).

    Every figure is vLLM's own (format_gib: GiB rounded to 2 places): `free_gib` free device memory after
    warm-up and graph capture, `committed_gib` the KV blocks warm-up had committed then, `kept_gib` what stays
    free for transients (the larger of `peak_gib`, the allocated peak, and `torch_growth_gib`, the torch
    reservation's growth over a sizing step), `blocks`/`kv_gib` the KV cache that fits, `requested_gib`
    total x utilization, `torch_cap_gib` the limit set on torch's caching allocator."""

    free_gib: float
    committed_gib: float
    kept_gib: float
    peak_gib: float
    torch_growth_gib: float
    blocks: int
    kv_gib: float
    requested_gib: float
    torch_cap_gib: float
    extended_blocks: int | None = None  # "Extended KV cache to N blocks": what every rank committed
    extended_gib: float | None = None  # ... its physical bytes, rounded to the driver's granule per segment
    remapped_from_blocks: int | None = None  # warm-up had committed more than the budget fits

    @property
    def pool_gib(self) -> float:
        """The KV cache the server serves with: the extension's, else what fit."""
        return self.extended_gib if self.extended_gib is not None else self.kv_gib


@dataclass(frozen=True)
class UtilizationCap:
    """vLLM 0.34's warning that an explicit gpu_memory_utilization keeps free memory out of the KV cache."""

    utilization: float
    cap_gib: float
    withheld_gib: float


@dataclass(frozen=True)
class StartupError:
    kind: ErrorKind
    text: str  # the matched text, as logged
    free_gib: float | None = None  # free_memory: F, T, u and R of the message
    total_gib: float | None = None
    utilization: float | None = None
    requested_gib: float | None = None
    needed_gib: float | None = None  # kv_too_small: X and Y of the message
    available_gib: float | None = None
    phase: str | None = None  # the startup step the traceback names, where it names one
    after_kv_cache: bool = False  # the KV cache had been sized and allocated when it failed

    def describe(self) -> str:
        if self.phase is None:
            return self.text
        when = ", after the KV cache was sized" if self.after_kv_cache else ""
        return f"failed in {self.phase}{when}: {self.text}"


@dataclass(frozen=True)
class StartupLog:
    """What one server's startup log says; None where the log does not say it."""

    vllm_version: str | None
    weights_gib: float | None
    kv_pool_gib: float | None
    kv_tokens: int | None
    max_concurrency: float | None
    concurrency_for_tokens: int | None
    graph_gib: float | None
    graph_estimate_gib: float | None
    num_gpu_blocks: int | None
    summary: StartupSummary | None
    error: StartupError | None
    ranks: int  # how many ranks logged their weights (1 unless tensor parallel)
    serving_error: StartupError | None = None  # a failure after the server began answering
    attention_block_size: int | None = None  # the hybrid block size the engine logged, if it changed it
    measured_kv: MeasuredKv | None = None  # vLLM 0.34+ with the extensible KV cache
    kv_profiled_gib: float | None = None  # "Available KV cache memory" where the pool was measured after it
    utilization_cap: UtilizationCap | None = None
    extensible_disabled: str | None = None  # why vLLM 0.34 sized this server from estimates instead
    compile_cache: Literal["cold", "warm"] | None = (
        None  # how torch.compile found its cache (None: not logged)
    )

    @property
    def has_startup_lines(self) -> bool:
        """Whether the log holds anything colo compares: a size vLLM reported or a startup error."""
        figures = (
            self.weights_gib,
            self.kv_pool_gib,
            self.kv_tokens,
            self.graph_gib,
            self.summary,
            self.measured_kv,
        )
        return self.error is not None or any(value is not None for value in figures)


def _floats(pattern: re.Pattern[str], text: str, group: int = 1) -> list[float]:
    return [float(match.group(group)) for match in pattern.finditer(text)]


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def _version(text: str) -> str | None:
    for pattern in _VERSION:
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def _weights(text: str) -> tuple[float | None, int]:
    """ "GB" (0.8.0-0.8.2) was a label only: the value is GiB in every release."""
    values = _floats(_WEIGHTS, text)
    return (max(values) if values else None), len(values)


def _kv_pool(text: str) -> float | None:
    values = _floats(_KV_POOL, text) or _floats(_KV_RESERVED, text)
    return min(values) if values else None


def _capacity(text: str) -> tuple[int | None, float | None, int | None]:
    tokens = _KV_TOKENS.search(text)
    concurrency = _CONCURRENCY.search(text)
    return (
        _count(tokens.group(2)) if tokens else None,
        float(concurrency.group(2)) if concurrency else None,
        _count(concurrency.group(1)) if concurrency else None,
    )


def _measured_kv(text: str) -> MeasuredKv | None:
    """The smallest rank's measurement (vLLM commits the minimum over ranks), with the extension it led to."""
    ranks = []
    for match in _MEASURED_KV.finditer(text):
        free, committed, kept, peak, growth = (float(g) for g in match.groups()[:5])
        blocks = _count(match.group(6))
        kv, requested, cap = (float(g) for g in match.groups()[6:])
        ranks.append(MeasuredKv(free, committed, kept, peak, growth, blocks, kv, requested, cap))
    if not ranks:
        return None
    smallest = min(ranks, key=lambda rank: rank.blocks)
    extended = [(_count(m.group(1)), float(m.group(2))) for m in _EXTENDED.finditer(text)]
    remapped = [_count(m.group(1)) for m in _REMAPPED.finditer(text)]
    return replace(
        smallest,
        extended_blocks=min(extended)[0] if extended else None,
        extended_gib=min(extended)[1] if extended else None,
        remapped_from_blocks=max(remapped) if remapped else None,
    )


def _utilization_cap(text: str) -> UtilizationCap | None:
    match = _UTILIZATION_CAP.search(text)
    return UtilizationCap(*(float(g) for g in match.groups())) if match else None


def _extensible_disabled(text: str) -> str | None:
    match = _EXTENSIBLE_DISABLED.search(text) or _EXTENSIBLE_OFF_IMEX.search(text)
    return match.group(1) if match else None


def _summary(text: str) -> StartupSummary | None:
    for line in text.splitlines():
        head = _SUMMARY_HEAD.search(line)
        if head is None:
            continue
        free, total, util, requested = (float(g) for g in head.groups())
        old, new = _USAGE_OLD.search(line), _USAGE_CONSUMED.search(line)
        in_use = _KV_IN_USE.search(line)
        kv = None
        if in_use:
            kv = float(in_use.group(1)) / (GIB if in_use.group(2) == "bytes" else 1)
        return StartupSummary(
            free_gib=free,
            total_gib=total,
            utilization=util,
            requested_gib=requested,
            weights_gib=float(old.group(1)) if old else None,
            non_torch_gib=float(old.group(3)) if old else None,
            consumed_gib=float(new.group(1)) if new else None,
            activation_gib=float(old.group(2)) if old else float(new.group(2)) if new else None,
            graph_gib=float(old.group(4)) if old else float(new.group(3)) if new else None,
            kv_in_use_gib=round(kv, 2) if kv is not None else None,
        )
    return None


def _error(text: str) -> StartupError | None:
    """The first cause vLLM names, most specific first, with the startup step it struck in."""
    error = _cause(text)
    if error is None:
        return None
    for pattern, phase, after_kv in PHASES:
        if _TRACEBACK.search(text) and pattern.search(text):
            return replace(error, phase=phase, after_kv_cache=after_kv)
    return error


def _startup_error(startup: str, *, answered: bool) -> StartupError | None:
    """A traceback vLLM logged and lived through (a fallback, a warning) is no failed start once it answered."""
    error = _error(startup)
    return None if error is not None and error.kind == "exception" and answered else error


def _cause(text: str) -> StartupError | None:
    match = _FREE_ERROR.search(text)
    if match:
        free, total, util, requested = (float(g) for g in match.groups()[1:])
        return StartupError(
            "free_memory",
            " ".join(match.group(0).split()),
            free_gib=free,
            total_gib=total,
            utilization=util,
            requested_gib=requested,
        )
    match = _KV_TOO_SMALL.search(text)
    if match:
        return StartupError(
            "kv_too_small",
            match.group(0),
            needed_gib=float(match.group(2)),
            available_gib=float(match.group(3)),
        )
    for kind, pattern in (("no_kv_memory", _NO_KV), ("out_of_memory", _OOM)):
        found = pattern.search(text)
        if found:
            return StartupError(kind, _whole_line(text, found.start()))  # type: ignore[arg-type]
    if _TRACEBACK.search(text) and (exception := _EXCEPTION.findall(text)):
        name, message = exception[0]
        return StartupError("exception", f"{name}: {message.strip()}"[:300])
    found = _ENGINE_FAILED.search(text)
    return StartupError("engine_failed", found.group(0)) if found else None


def _whole_line(text: str, at: int) -> str:
    """The logged line holding position `at`, without vLLM's logger prefix, at most 300 characters."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start : end if end >= 0 else len(text)]
    return line.split("] ", 1)[-1].strip()[:300]


def _serving_error(serving: str) -> StartupError | None:
    """The first failure after the server answered, with its whole line (what it tried, what was free)."""
    error = _cause(serving)
    if error is None:
        return None
    start = serving.find(error.text)
    return replace(error, text=_whole_line(serving, start)) if start >= 0 else error


def _split_at_serving(text: str) -> tuple[str, str]:
    """(startup, serving): the log before and after the API server began answering."""
    match = _SERVING.search(text)
    return (text, "") if match is None else (text[: match.start()], text[match.start() :])


def _compile_cache(text: str) -> Literal["cold", "warm"] | None:
    if _COMPILED_COLD.search(text):
        return "cold"
    return "warm" if _COMPILED_WARM.search(text) else None


def _attention_block_size(text: str) -> int | None:
    sizes = [int(match.group(1)) for match in _ATTENTION_BLOCK.finditer(text)]
    return sizes[-1] if sizes else None


def parse_startup_log(text: str) -> StartupLog:
    """Every figure the log prints; figures from the summary line fill in what the other lines lack."""
    startup, serving = _split_at_serving(text)
    weights, ranks = _weights(text)
    summary = _summary(text)
    kv_pool = _kv_pool(text)
    measured = _measured_kv(startup)
    profiled = None
    if measured is not None:  # 0.34+: the profiled figure only sized the reservation
        profiled, kv_pool = kv_pool, measured.pool_gib
    graphs = _floats(_GRAPHS, text) or _floats(_GRAPH_POOL, text)
    graph = max(graphs) if graphs else None
    if summary is not None:
        weights = weights if weights is not None else summary.weights_gib
        kv_pool = kv_pool if kv_pool is not None else summary.kv_in_use_gib
        graph = graph if graph is not None else summary.graph_gib
    estimates = _floats(_GRAPH_ESTIMATE, text) or _floats(_GRAPH_POOL, text, group=2)
    tokens, concurrency, for_tokens = _capacity(text)
    blocks = _BLOCKS.search(text)
    return StartupLog(
        vllm_version=_version(text),
        weights_gib=weights,
        kv_pool_gib=kv_pool,
        kv_tokens=tokens,
        max_concurrency=concurrency,
        concurrency_for_tokens=for_tokens,
        graph_gib=graph,
        graph_estimate_gib=max(estimates) if estimates else None,
        num_gpu_blocks=int(blocks.group(1)) if blocks else None,
        summary=summary,
        error=_startup_error(startup, answered=bool(serving)),
        ranks=max(ranks, 1),
        serving_error=_serving_error(serving) if serving else None,
        attention_block_size=_attention_block_size(startup),
        measured_kv=measured,
        kv_profiled_gib=profiled,
        utilization_cap=_utilization_cap(startup),
        extensible_disabled=_extensible_disabled(startup),
        compile_cache=_compile_cache(startup),
    )
