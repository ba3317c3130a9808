"""Several vLLM processes on one GPU, started one after another.

Each process is sized by `size_process` against the free memory it finds: what the earlier ones hold.
Utilizations are derived unless the config overrides them: the small servers get what their own limits need,
and the last server (the LLM) gets the most that still leaves the stated safety margin once every process,
CUDA contexts and graphs outside vLLM's budget included, is resident. When CUDA graphs do not fit, capture
sizes shrink, then the server falls back to eager mode, and the plan says so.

Releases up to 0.9.0 budget globally: `total × util` caps everything on the GPU, the servers started before
included, so a later server's utilization is cumulative (it must cover the earlier servers' memory too).
Derived utilizations take that into account; an override that forgets it is refused with the value that works.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil, floor

from colo.catalog import MIB, GpuSpec
from colo.errors import Problem
from colo.roles import Role
from colo.vllm.process.budget import GRAPH_PROFILE_OOM, ProcessBudget, ProcessSpec, geometry_for, size_process
from colo.vllm.process.cudagraph import SMALL_CAPTURE_SIZES
from colo.vllm.process.kv_cache import kv_bytes_for_requests, max_model_len_for

UTIL_STEP = 1000  # utilizations are written with three decimals
# Decode cost of eager mode, as the field report measured it (TPOT ~55 ms with graphs, 88 ms eager).
EAGER_TPOT_MS = (55, 88)


@dataclass(frozen=True)
class ServerRequest:
    role: Role
    config_path: str  # e.g. colo:pairs[0].llm, for messages
    spec: ProcessSpec  # its gpu_memory_utilization is the override, or None to derive
    eager: str  # "auto", "true", "false"
    target_requests: float  # KV to hold: concurrent max_model_len requests


@dataclass(frozen=True)
class ServerPlan:
    role: Role
    config_path: str
    budget: ProcessBudget
    utilization_derived: bool
    graph_decision: str
    notes: tuple[str, ...]

    @property
    def utilization(self) -> float:
        return self.budget.spec.utilization


@dataclass(frozen=True)
class GpuPlan:
    gpu: GpuSpec
    servers: tuple[ServerPlan, ...]
    safety_margin_bytes: int
    problems: tuple[Problem, ...]

    @property
    def used_bytes(self) -> int:
        return sum(s.budget.footprint_bytes for s in self.servers)

    @property
    def free_bytes(self) -> int:
        return self.gpu.cuda_total_bytes - self.used_bytes

    @property
    def feasible(self) -> bool:
        return not self.problems


def _util_up(bytes_needed: int, total: int) -> float:
    return ceil(bytes_needed / total * UTIL_STEP) / UTIL_STEP


def _util_down(bytes_allowed: int, total: int) -> float:
    return floor(bytes_allowed / total * UTIL_STEP) / UTIL_STEP


def _kv_target(spec: ProcessSpec, requests: float) -> int:
    geometry = geometry_for(spec)
    if geometry is None:
        return 0
    return kv_bytes_for_requests(
        geometry,
        requests,
        max_model_len=spec.limits.max_model_len,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
        null_block_reserved=spec.rules.null_block_reserved,
        sliding_inflight_batches=spec.rules.sliding_inflight_batches,
    )


def _request_needed(probe: ProcessBudget, requests: float) -> int:
    """Bytes `total × util` must cover for the KV pool to hold `requests`: weights, activations, non-torch
    growth, in-budget graphs and the KV target; under global accounting also what the GPU already holds and
    this process's context."""
    spec = probe.spec
    need = probe.weights_bytes + probe.activation_bytes + probe.non_torch_bytes
    if probe.graph_estimate_in_budget:
        need += probe.graphs.estimate_bytes
    need += _kv_target(spec, requests)
    if probe.global_accounting:
        need += probe.others_bytes + probe.context_bytes
    if probe.capacity is None:  # encoder-only: util only gates the startup check
        need = (
            probe.weights_bytes + probe.activation_bytes + probe.non_torch_bytes + probe.graphs.resident_bytes
        )
    return need


def _derive_small(spec: ProcessSpec, requests: float, free_before: int) -> ProcessSpec:
    """Utilization that covers what `_request_needed` lists."""
    probe = size_process(replace(spec, gpu_memory_utilization=0.5), free_before_bytes=free_before)
    need = _request_needed(probe, requests)
    return replace(spec, gpu_memory_utilization=min(_util_up(need, spec.gpu.cuda_total_bytes), 0.99))


def _resident_limit_util(b: ProcessBudget, free_before: int, margin: int) -> float:
    """The highest utilization whose process, context and out-of-budget graphs still leave `margin` free."""
    return _util_down(free_before - b.resident_beyond_request_bytes - margin, b.spec.gpu.cuda_total_bytes)


def _derive_last(spec: ProcessSpec, free_before: int, margin: int) -> ProcessSpec:
    """The most the last server may request so that everything resident still leaves `margin`."""
    probe = size_process(replace(spec, gpu_memory_utilization=0.5), free_before_bytes=free_before)
    util = max(_resident_limit_util(probe, free_before, margin), 1 / UTIL_STEP)
    return replace(spec, gpu_memory_utilization=min(util, 0.99))


def _fits(budget: ProcessBudget, free_before: int, margin: int, requests: float) -> bool:
    if not budget.ok or budget.footprint_bytes > free_before - margin:
        return False
    return budget.capacity is None or budget.capacity.max_concurrency >= requests


def _candidates(request: ServerRequest) -> list[tuple[ProcessSpec, str]]:
    spec = request.spec
    if request.eager == "true" or spec.enforce_eager:
        return [(replace(spec, enforce_eager=True, capture_sizes=None), "eager (config)")]
    options = [(spec, "captured (configured sizes)" if spec.capture_sizes else "captured (default sizes)")]
    if request.eager == "auto":
        small = tuple(s for s in SMALL_CAPTURE_SIZES if s <= spec.limits.max_num_seqs)
        if spec.capture_sizes is None or tuple(spec.capture_sizes) != small:
            options.append((replace(spec, capture_sizes=small), f"captured (reduced sizes {list(small)})"))
        options.append((replace(spec, enforce_eager=True, capture_sizes=None), "eager (fallback)"))
    return options


def _size_one(request: ServerRequest, free_before: int, margin: int, last: bool) -> ServerPlan:
    """Try default graphs, then reduced sizes, then eager; keep the first that fits with the margin,
    else the first that at least does not run out of memory, else the last resort."""
    derived = request.spec.gpu_memory_utilization is None and request.spec.kv_cache_memory_bytes is None
    tried: list[tuple[ProcessBudget, str]] = []
    for spec, decision in _candidates(request):
        if derived:
            spec = (
                _derive_last(spec, free_before, margin)
                if last
                else _derive_small(spec, request.target_requests, free_before)
            )
        tried.append((size_process(spec, free_before_bytes=free_before), decision))
    budget, decision = next(
        (t for t in tried if _fits(t[0], free_before, margin, request.target_requests)),
        next((t for t in tried if _fits(t[0], free_before, 0, request.target_requests)), tried[-1]),
    )
    notes: list[str] = []
    if decision != tried[0][1]:
        notes.append(f"CUDA graphs with {tried[0][1].removeprefix('captured ')} do not fit: {decision}")
    if decision == "eager (fallback)":
        notes.append(
            f"enforce-eager skips torch.compile and CUDA graphs: expect slower decoding (the field report "
            f"measured TPOT {EAGER_TPOT_MS[0]} -> {EAGER_TPOT_MS[1]} ms)"
        )
    return ServerPlan(request.role, request.config_path, budget, derived, decision, tuple(notes))


def _explain(server: ServerPlan, free_before: int, margin: int) -> list[Problem]:
    b = server.budget
    path = server.config_path
    gib = 1024**3
    problems: list[Problem] = []
    limit = _resident_limit_util(b, free_before, margin)
    if not b.startup.ok:
        problems.append(
            Problem(
                f"{path}.gpuMemoryUtilization",
                f"{b.startup.message} [vLLM's startup check: this server starts after the ones before it hold "
                f"{(b.spec.gpu.cuda_total_bytes - free_before) / gib:.2f} GiB; fix: {_utilization_advice(limit)} "
                f"(what fits beside its CUDA context, graphs outside vLLM's budget and the safety margin) or drop "
                f"the override so colo derives it]",
            )
        )
    if not b.weights_fit:
        return [*problems, _weights_problem(server)]
    if b.errors and b.errors[0].startswith(GRAPH_PROFILE_OOM):
        return [
            *problems,
            Problem(
                path,
                f"{b.errors[0]}; fixes: fewer cudagraphCaptureSizes (the temporary cache has as many blocks as the "
                f"largest size), enforceEager: true, or a smaller maxModelLen",
            ),
        ]
    for error in b.errors:
        geometry = geometry_for(b.spec)
        hint = ""
        if geometry is not None and b.kv_bytes > 0:
            fit = max_model_len_for(
                geometry,
                b.kv_bytes,
                max_num_batched_tokens=b.spec.limits.max_num_batched_tokens,
                num_speculative_tokens=b.spec.num_speculative_tokens,
                upper=b.spec.limits.max_model_len,
                sliding_inflight_batches=b.spec.rules.sliding_inflight_batches,
            )
            hint = f"; the KV pool holds one request of at most {fit} tokens"
        problems.append(
            Problem(
                f"{path}.maxModelLen",
                f"{error} [weights {b.weights_bytes / gib:.2f} GiB, activations {b.activation_bytes / gib:.2f} GiB, "
                f"CUDA graphs {b.graphs.bytes / gib:.2f} GiB leave {b.kv_bytes / gib:.2f} GiB of KV cache{hint}; "
                f"fixes: {_cumulative_fix(server, free_before, margin)}lower maxModelLen, set kvCacheDtype: fp8, use "
                f"a smaller or quantized model, or give this pair a larger GPU{_margin_fix(server, margin)}]",
            )
        )
    if b.startup.ok and not b.errors and b.footprint_bytes > free_before:
        problems.append(
            Problem(
                path,
                f"out of memory after startup: this server needs {b.footprint_bytes / gib:.2f} GiB resident "
                f"(CUDA context {b.context_bytes / gib:.2f}, graphs outside vLLM's budget "
                f"{b.graphs_outside_budget_bytes / gib:.2f}) but only "
                f"{free_before / gib:.2f} GiB is free; fixes: {_utilization_advice(limit)}, shrink "
                f"cudagraphCaptureSizes, or set enforceEager",
            )
        )
    elif b.ok and b.footprint_bytes > free_before - margin:
        problems.append(
            Problem(
                path,
                f"leaves {(free_before - b.footprint_bytes) / 2**20:.0f} MiB free, less than the safety margin of "
                f"{margin / 2**20:.0f} MiB (colo:budget.safetyMarginMiB); {_utilization_advice(limit)}",
            )
        )
    return problems


def _utilization_advice(limit: float) -> str:
    """A utilization that fits, or, when none does, that the servers before this one already fill the GPU."""
    if limit > 0:
        return f"set its utilization to at most {limit:.3f}"
    return (
        "no utilization fits: the servers started before it already hold the GPU, so lower theirs, or give "
        "this server a GPU of its own"
    )


def _weights_problem(server: ServerPlan) -> Problem:
    b = server.budget
    return Problem(
        f"{server.config_path}.model",
        f"{b.errors[0]}: vLLM fails while loading them, before any KV cache is sized; fixes: a quantized "
        f"checkpoint of the model, a smaller model, or a GPU with more memory",
    )


def _cumulative_fix(server: ServerPlan, free_before: int, margin: int) -> str:
    """Under global accounting an overridden utilization must include what the earlier servers hold."""
    b = server.budget
    if not b.global_accounting or server.utilization_derived or b.others_bytes <= 0:
        return ""
    need = _util_up(_request_needed(b, 1.0), b.spec.gpu.cuda_total_bytes)
    limit = _resident_limit_util(b, free_before, margin)
    return (
        f"vLLM {b.spec.vllm_version} budgets the whole GPU (gpu_memory_utilization caps every process on it, "
        f"and the servers started before this one hold {b.others_bytes / 1024**3:.2f} GiB), so this server's "
        f"utilization is cumulative: set it to at least {need:.3f} (at most {limit:.3f} leaves the margin) or "
        f"drop the override so colo derives it; or "
    )


def _margin_fix(server: ServerPlan, margin: int) -> str:
    """When colo derived the utilization, the safety margin is one of the things that squeezed it."""
    if not server.utilization_derived or margin == 0:
        return ""
    return f", or lower colo:budget.safetyMarginMiB ({margin // MIB} MiB now)"


def plan_gpu(gpu: GpuSpec, requests: list[ServerRequest], safety_margin_mib: int) -> GpuPlan:
    """Size the servers in start order; the last one takes what is left."""
    margin = safety_margin_mib * MIB
    free = gpu.cuda_total_bytes
    servers: list[ServerPlan] = []
    problems: list[Problem] = []
    for index, request in enumerate(requests):
        last = index == len(requests) - 1
        server = _size_one(request, free, margin, last)
        problems += _explain(server, free, margin)
        if (
            server.budget.capacity is not None
            and server.budget.ok
            and server.budget.capacity.max_concurrency < (request.target_requests)
        ):
            problems.append(
                Problem(
                    f"{request.config_path}.maxModelLen",
                    f"KV cache holds {server.budget.capacity.max_concurrency:.2f} concurrent max-length requests, "
                    f"fewer than the {request.target_requests:g} this server is planned for "
                    f"(colo:budget.{'embeddingConcurrency' if request.spec.pooling else 'llmMinConcurrency'}); "
                    f"lower maxModelLen or use kvCacheDtype: fp8{_margin_fix(server, margin)}",
                )
            )
        servers.append(server)
        free -= server.budget.footprint_bytes
    return GpuPlan(gpu, tuple(servers), margin, tuple(problems))
