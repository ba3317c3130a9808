"""Several vLLM processes on one GPU, started one after another.

Each process is sized by `size_process` against the free memory it finds: what the earlier ones hold.
Utilizations are derived unless the config overrides them: the small servers get what their own limits need,
and the last server (the LLM) gets the most that still leaves the stated safety margin once every process,
CUDA contexts and graphs outside vLLM's budget included, is resident. When CUDA graphs do not fit, capture
sizes shrink, then the server falls back to eager mode, and the plan says so.

Releases up to 0.9.0 budget globally: `total × util` caps everything on the GPU, the servers started before
included, so a later server's utilization is cumulative (it must cover the earlier servers' memory too).
Derived utilizations take that into account; an override that forgets it is refused with the value that works.

From 0.34 vLLM sizes each pool after warm-up and no longer refuses an over-committed GPU: a server left unset
takes the whole card, and one whose request exceeds what it finds free silently sizes its pool from the free
memory instead (`vllm 0.34.0 v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes`). colo therefore sets
every utilization, leaves the GPU a slack of at least every server's vLLM margin (max(1 GiB, 0.75 × its
transient)) so that each server's pool comes from its request, not from what its neighbours hold, and checks
that any server restarted alone beside the others finds its own slot again. What vLLM no longer refuses, colo
does, with the figures vLLM would log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil, floor

from colo.catalog import MIB, GpuSpec
from colo.errors import Problem
from colo.roles import Role
from colo.vllm.process.budget import (
    GRAPH_PROFILE_OOM,
    MAMBA_SEQS_ERROR,
    ProcessBudget,
    ProcessSpec,
    geometry_for,
    size_process,
)
from colo.vllm.process.cudagraph import SMALL_CAPTURE_SIZES
from colo.vllm.process.kv_cache import kv_bytes_for_requests, max_model_len_for

UTIL_STEP = 1000  # utilizations are written with three decimals
# Decode cost of eager mode, as the field report measured it (TPOT ~55 ms with graphs, 88 ms eager).
EAGER_TPOT_MS = (55, 88)
FEWER_SEQS = ", max-num-seqs "  # a decision's suffix where colo lowered a hybrid model's derived batch


@dataclass(frozen=True)
class ServerRequest:
    role: Role
    config_path: str  # e.g. colo:pairs[0].llm, for messages
    spec: ProcessSpec  # its gpu_memory_utilization is the override, or None to derive
    eager: str  # "auto", "true", "false"
    target_requests: float  # KV to hold: concurrent max_model_len requests
    # Where vLLM sizes the pool after warm-up (0.34+): pin it with --kv-cache-memory-bytes at the planned size
    # (identical on every boot, no self-correction) instead of letting vLLM measure it (adapts, bounded by
    # the request; a cold compile cache's first boot gets less)
    pin_kv: bool = False
    # max_num_seqs is vLLM's default, not the user's: colo may lower it where a hybrid model's state blocks are fewer
    seqs_derived: bool = False

    @property
    def utilization_derived(self) -> bool:
        """Neither a utilization nor a fixed pool was set: colo derives the utilization for each candidate."""
        return self.spec.gpu_memory_utilization is None and self.spec.kv_cache_memory_bytes is None


@dataclass(frozen=True)
class ServerPlan:
    role: Role
    config_path: str
    budget: ProcessBudget
    utilization_derived: bool
    graph_decision: str
    notes: tuple[str, ...]
    # the server with the graphs it was configured with: what a suggested utilization keeps them at
    configured: ProcessBudget | None = None

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
    if probe.measured is not None:  # sized after warm-up: what it holds, the transient kept free, the pool
        geometry = geometry_for(spec)
        assert geometry is not None
        rounding = (geometry.slots or geometry.group_size) * _granule(probe)  # a granule a segment, at most
        return (
            probe.measured.non_kv_bytes
            + probe.measured.transient_bytes
            + _kv_target(spec, requests)
            + rounding
        )
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


def _granule(budget: ProcessBudget) -> int:
    rules = budget.spec.rules.measured_kv_sizing
    return rules.granule_mib * MIB if rules else 0


def _vllm_margin(budget: ProcessBudget) -> int:
    """The free memory vLLM keeps beyond a pool it sizes after warm-up: below it, the pool comes from what the
    device has free rather than from the request (0 where the pool is sized from the profile)."""
    return budget.measured.margin_bytes if budget.measured is not None else 0


def _derive_small(spec: ProcessSpec, requests: float, free_before: int) -> ProcessSpec:
    """Utilization that covers what `_request_needed` lists."""
    probe = size_process(replace(spec, gpu_memory_utilization=0.5), free_before_bytes=free_before)
    need = _request_needed(probe, requests)
    return replace(spec, gpu_memory_utilization=min(_util_up(need, spec.gpu.cuda_total_bytes), 0.99))


def _resident_limit_bytes(b: ProcessBudget, free_before: int, margin: int) -> int:
    """The largest request whose process, context and out-of-budget graphs still leave `margin` free; sized
    after warm-up, also one that leaves the process its own vLLM margin at its snapshot, so that its pool comes
    from the request and not from what the device has free."""
    limit = free_before - b.resident_beyond_request_bytes - margin
    if b.measured is not None:
        limit = min(limit, free_before - b.context_bytes - b.measured.margin_bytes)
    return limit


def _resident_limit_util(b: ProcessBudget, free_before: int, margin: int) -> float:
    """`_resident_limit_bytes` as a utilization vLLM can be given (rounded down to the flag's three decimals)."""
    return _util_down(_resident_limit_bytes(b, free_before, margin), b.spec.gpu.cuda_total_bytes)


def room_for_last(request: ServerRequest, free_before: int, slack: int) -> int:
    """Bytes the last server started may request beside what `free_before` leaves, keeping `slack` free: what a
    GPU offers the server that takes the rest (a tensor-parallel rank's slice is the least any GPU offers)."""
    probe = size_process(replace(request.spec, gpu_memory_utilization=0.5), free_before_bytes=free_before)
    return _resident_limit_bytes(probe, free_before, slack)


def _derive_last(spec: ProcessSpec, free_before: int, margin: int) -> ProcessSpec:
    """The most the last server may request so that everything resident still leaves `margin`."""
    probe = size_process(replace(spec, gpu_memory_utilization=0.5), free_before_bytes=free_before)
    util = max(_resident_limit_util(probe, free_before, margin), 1 / UTIL_STEP)
    return replace(spec, gpu_memory_utilization=min(util, 0.99))


def pin_pool(budget: ProcessBudget, free_before: int) -> ProcessBudget:
    """The server with its pool pinned at the size vLLM would measure (`--kv-cache-memory-bytes`, which turns
    the extensible KV cache off); its utilization stays, for the startup check that returns with it."""
    if budget.measured is None or budget.capacity is None or budget.kv_bytes <= 0:
        return budget
    pinned = replace(budget.spec, kv_cache_memory_bytes=budget.kv_bytes)
    return size_process(pinned, free_before_bytes=free_before)


def _fits(budget: ProcessBudget, free_before: int, margin: int, requests: float) -> bool:
    if not budget.ok or budget.footprint_bytes > free_before - margin:
        return False
    if budget.measured is not None and budget.measured.bound != "requested":
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


def size_server(request: ServerRequest, free_before: int, margin: int, last: bool) -> ServerPlan:
    """Try default graphs, then reduced sizes, then eager; keep the first that fits with the margin,
    else the first that at least does not run out of memory, else the last resort. A graph candidate whose
    batch vLLM would refuse for a hybrid model's state blocks runs with the batch lowered where colo derived
    it; where the user set it, that refusal is the plan's answer (the fix is the batch, not eager mode)."""
    tried: list[tuple[ProcessBudget, str]] = []
    for spec, decision in _candidates(request):
        budget = _size_candidate(spec, request, free_before, margin, last)
        if _too_many_seqs(budget):
            if not request.seqs_derived:
                tried = [(budget, decision)]
                break
            budget, decision = _fewer_seqs(budget, spec, decision, request, free_before, margin, last)
        tried.append((budget, decision))
    budget, decision = next(
        (t for t in tried if _fits(t[0], free_before, margin, request.target_requests)),
        next((t for t in tried if _fits(t[0], free_before, 0, request.target_requests)), tried[-1]),
    )
    notes = _decision_notes(budget, decision, tried[0][1], request.spec.limits.max_num_seqs)
    if request.pin_kv and budget.measured is not None:
        budget = pin_pool(budget, free_before)
    return ServerPlan(
        request.role,
        request.config_path,
        budget,
        request.utilization_derived,
        decision,
        tuple(notes),
        configured=tried[0][0],
    )


def _size_candidate(
    spec: ProcessSpec, request: ServerRequest, free_before: int, margin: int, last: bool
) -> ProcessBudget:
    if request.utilization_derived:
        spec = (
            _derive_last(spec, free_before, margin)
            if last
            else _derive_small(spec, request.target_requests, free_before)
        )
    return size_process(spec, free_before_bytes=free_before)


def _decision_notes(budget: ProcessBudget, decision: str, first: str, default_seqs: int) -> list[str]:
    """What the plan says about the graphs and batch it chose, where they are not the first candidate's."""
    if not budget.weights_fit:  # the model cannot load: how its graphs would fare is beside the point
        return []
    graphs, _, lowered = decision.partition(FEWER_SEQS)
    first = first.partition(FEWER_SEQS)[0]  # the graphs first tried, whether or not their batch was lowered
    notes = []
    if lowered:
        notes.append(
            f"max-num-seqs lowered from vLLM's default {default_seqs} to {budget.spec.limits.max_num_seqs}, "
            f"which keeps the CUDA graphs: with FULL decode graphs vLLM {budget.spec.vllm_version} keeps one "
            f"recurrent-state block per decode sequence and refuses a batch larger than the KV pool's blocks "
            f"(set maxNumSeqs to choose the batch yourself)"
        )
    if graphs != first:
        notes.append(
            f"CUDA graphs with {first.removeprefix('captured ')} do not fit: {graphs}; {_decode_cost(graphs)}"
        )
    elif graphs == "eager (fallback)":
        notes.append(_decode_cost(graphs))
    return notes


def _batch_below(blocks: int) -> int:
    """The batch colo offers under a hybrid model's state blocks: 5 % below them, for a cold first start's
    smaller pool, in steps of 8 (a capture size)."""
    return int(blocks * 0.95) // 8 * 8


def _too_many_seqs(budget: ProcessBudget) -> bool:
    return bool(budget.errors) and budget.errors[0].startswith(MAMBA_SEQS_ERROR)


def _fewer_seqs(
    refused: ProcessBudget,
    spec: ProcessSpec,
    decision: str,
    request: ServerRequest,
    free_before: int,
    margin: int,
    last: bool,
) -> tuple[ProcessBudget, str]:
    """The candidate vLLM would refuse for a hybrid model's state blocks, with its derived batch lowered below
    what the pool holds (_batch_below). Fewer sequences leave the pool no smaller, so the lowered batch still fits
    its blocks."""
    blocks = refused.decode_state_blocks or 0
    seqs = _batch_below(blocks)
    if seqs < 8:
        return refused, decision
    lowered = replace(spec, limits=replace(spec.limits, max_num_seqs=seqs))
    return _size_candidate(lowered, request, free_before, margin, last), f"{decision}{FEWER_SEQS}{seqs}"


def _decode_cost(decision: str) -> str:
    """What a graph fallback costs in decode speed, from the field report's measurement (an L40S pair)."""
    slow, fast = EAGER_TPOT_MS[1], EAGER_TPOT_MS[0]
    measured = f"the field report measured TPOT {slow} ms eager against {fast} ms with graphs, +{slow / fast - 1:.0%}"
    if decision == "eager (fallback)":
        return f"enforce-eager skips torch.compile and CUDA graphs: expect slower decoding ({measured})"
    largest = decision.rsplit("[", 1)[-1].rstrip("])").split(",")[-1].strip()
    return (
        f"decode batches above {largest} sequences replay no CUDA graph and run as eager mode does ({measured}); "
        f"smaller batches keep their speed"
    )


def _explain(server: ServerPlan, free_before: int, margin: int) -> list[Problem]:
    b = server.budget
    # one suggestion for one config: the limit of the server as configured, whichever fallback was tried
    limit = _resident_limit_util(server.configured or b, free_before, margin)
    problems: list[Problem] = []
    if b.measured is not None and b.measured.bound == "free" and b.capacity is not None:
        problems.append(_free_bound_problem(server, free_before, limit))
    if not b.startup.ok:
        problems.append(_startup_problem(server, free_before, limit))
    if not b.weights_fit:
        return [*problems, _weights_problem(server)]
    if b.errors and b.errors[0].startswith(GRAPH_PROFILE_OOM):
        return [
            *problems,
            Problem(
                server.config_path,
                f"{b.errors[0]}; fixes: fewer cudagraphCaptureSizes (the temporary cache has as many blocks as the "
                f"largest size), enforceEager: true, or a smaller maxModelLen",
            ),
        ]
    if _too_many_seqs(b):
        return [*problems, _mamba_seqs_problem(server)]
    problems += [_kv_problem(server, error, free_before, margin) for error in b.errors]
    return [*problems, *_resident_problems(server, free_before, margin, limit)]


def _mamba_seqs_problem(server: ServerPlan) -> Problem:
    """A hybrid model's decode batch larger than its recurrent-state blocks: the fix is the batch, with room for
    the KV figure's error (a cold first start's pool is a few percent smaller)."""
    b = server.budget
    blocks = b.decode_state_blocks or 0
    safe = max(8, _batch_below(blocks))
    return Problem(
        f"{server.config_path}.maxNumSeqs",
        f"{b.errors[0]} (vLLM {b.spec.vllm_version} refuses to start: this hybrid model keeps one recurrent-state "
        f"block per decode sequence and its KV pool holds {blocks} blocks as planned); fix: set maxNumSeqs to at "
        f"most {blocks}, e.g. {safe} (5 % below, for a cold first start's smaller pool), or give the pair a "
        f"larger GPU",
    )


def _startup_problem(server: ServerPlan, free_before: int, limit: float) -> Problem:
    b = server.budget
    return Problem(
        f"{server.config_path}.gpuMemoryUtilization",
        f"{b.startup.message} [vLLM's startup check: this server starts after the ones before it hold "
        f"{(b.spec.gpu.cuda_total_bytes - free_before) / 1024**3:.2f} GiB; fix: {_utilization_advice(limit)} "
        f"(what fits beside its CUDA context, graphs outside vLLM's budget and the safety margin) or drop "
        f"the override so colo derives it]",
    )


def _kv_problem(server: ServerPlan, error: str, free_before: int, margin: int) -> Problem:
    """A KV pool vLLM refuses, with what took the memory and the longest request the pool would hold."""
    b = server.budget
    gib = 1024**3
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
    return Problem(
        f"{server.config_path}.maxModelLen",
        f"{error} [weights {b.weights_bytes / gib:.2f} GiB, activations {b.activation_bytes / gib:.2f} GiB, "
        f"CUDA graphs {b.graphs.bytes / gib:.2f} GiB leave {b.kv_bytes / gib:.2f} GiB of KV cache{hint}; "
        f"fixes: {_cumulative_fix(server, free_before, margin)}lower maxModelLen, set kvCacheDtype: fp8, use "
        f"a smaller or quantized model, or give this pair a larger GPU{_margin_fix(server, margin)}]",
    )


def _resident_problems(server: ServerPlan, free_before: int, margin: int, limit: float) -> list[Problem]:
    """A server that started but holds more than the GPU has free, or eats into the safety margin."""
    b = server.budget
    gib = 1024**3
    if b.startup.ok and not b.errors and b.footprint_bytes > free_before:
        return [
            Problem(
                server.config_path,
                f"out of memory after startup: this server needs {b.footprint_bytes / gib:.2f} GiB resident "
                f"(CUDA context {b.context_bytes / gib:.2f}, graphs outside vLLM's budget "
                f"{b.graphs_outside_budget_bytes / gib:.2f}) but only "
                f"{free_before / gib:.2f} GiB is free; fixes: {_utilization_advice(limit)}, shrink "
                f"cudagraphCaptureSizes, or set enforceEager",
            )
        ]
    if b.ok and b.footprint_bytes > free_before - margin:
        return [
            Problem(
                server.config_path,
                f"leaves {(free_before - b.footprint_bytes) / 2**20:.0f} MiB free, less than the safety margin of "
                f"{margin / 2**20:.0f} MiB (colo:budget.safetyMarginMiB); {_utilization_advice(limit)}",
            )
        ]
    return []


def _free_bound_problem(server: ServerPlan, free_before: int, limit: float) -> Problem:
    """What vLLM 0.34 no longer refuses: a request beyond what the server finds free, which it meets by sizing
    its pool from the free memory, so the pool depends on what its neighbours hold at that moment."""
    b = server.budget
    m = b.measured
    assert m is not None
    gib = 1024**3
    requested_side = m.reserved_bytes if m.available_bytes < 0 else b.requested_bytes - m.non_kv_bytes
    return Problem(
        f"{server.config_path}.gpuMemoryUtilization",
        f"vLLM {b.spec.vllm_version} would start this server without a refusal (with the extensible KV cache its "
        f"request, {b.spec.utilization} or {b.requested_bytes / gib:.2f} GiB, is only a cap), but started after "
        f"the servers before it hold {(b.spec.gpu.cuda_total_bytes - free_before) / gib:.2f} GiB it finds "
        f"{m.free_seen_bytes / gib:.2f} GiB free and sizes its KV cache from that, less a margin of "
        f"{m.margin_bytes / gib:.2f} GiB and {m.transient_bytes / gib:.2f} GiB kept for transients: "
        f"{b.kv_bytes / gib:.2f} GiB where its request leaves room for "
        f"{max(requested_side - m.transient_bytes, 0) / gib:.2f} GiB, and a size that moves with whatever its "
        f"neighbours hold [fix: {_utilization_advice(limit)} or drop the override so colo derives it]",
    )


def restart_problems(plan: GpuPlan) -> list[Problem]:
    """Every server sized after warm-up must find its own slot again when it restarts alone beside the others
    at their planned footprints: the same pool, from its request rather than from what is free."""
    problems: list[Problem] = []
    total = plan.gpu.cuda_total_bytes
    for index, server in enumerate(plan.servers):
        b = server.budget
        if b.measured is None or b.capacity is None or not b.ok:
            continue
        others = sum(s.budget.footprint_bytes for i, s in enumerate(plan.servers) if i != index)
        again = size_process(b.spec, free_before_bytes=total - others)
        if again.kv_bytes >= b.kv_bytes and again.ok:
            continue
        gib = 1024**3
        tokens = again.capacity.tokens if again.capacity else 0
        planned = b.capacity.tokens
        error = f"; vLLM refuses it then: {again.errors[0]}" if again.errors else ""
        problems.append(
            Problem(
                f"{server.config_path}.gpuMemoryUtilization",
                f"would not restart into its own slot: restarted alone beside the other servers at their planned "
                f"footprints it finds {(total - others - b.context_bytes) / gib:.2f} GiB free, and vLLM "
                f"{b.spec.vllm_version} sizes its KV cache from that: {again.kv_bytes / gib:.2f} GiB "
                f"({tokens} tokens) instead of the planned {b.kv_bytes / gib:.2f} GiB ({planned} tokens){error} "
                f"[fix: lower the utilizations of the servers beside it, or drop the overrides so colo derives "
                f"them with room for every server's restart]",
            )
        )
    return problems


def _shared_gpu_notes(server: ServerPlan) -> tuple[str, ...]:
    """Why a server sized after warm-up carries an explicit utilization on a shared GPU, and the warning vLLM
    prints for it (`measure_kv_cache_blocks`: 0.7 < utilization < 1.0 withholding at least 1 GiB)."""
    b = server.budget
    rules = b.spec.rules.measured_kv_sizing
    if b.measured is None or rules is None:
        return ()
    notes = [
        f"utilization {b.spec.utilization} is set explicitly: on a shared GPU vLLM {b.spec.vllm_version} sizes "
        f"its KV cache from what it finds free, and a server left unset would take the whole card "
        f"({rules.default_gpu_memory_utilization})"
    ]
    withheld = b.measured.free_seen_bytes - b.measured.margin_bytes - b.requested_bytes
    if rules.cap_warning_above < b.spec.utilization < 1.0 and withheld >= 1024**3:
        notes.append(
            f"vLLM will warn that gpu_memory_utilization={b.spec.utilization} keeps {withheld / 1024**3:.2f} GiB "
            f"of free device memory out of this server's KV cache and suggest leaving it unset: expected here, "
            f"that memory is what this server may grow by under load and the slack its neighbours need to "
            f"restart into their slots"
        )
    return tuple(notes)


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


def slack_beside(servers: list[ServerPlan], margin: int) -> int:
    """What the server that takes the rest must leave free: the safety margin, and, where pools are sized after
    warm-up, every earlier server's vLLM margin, so that each can restart into its own slot."""
    return max([margin, *(_vllm_margin(s.budget) for s in servers)])


def server_problems(
    server: ServerPlan, request: ServerRequest, free_before: int, slack: int, margin: int
) -> list[Problem]:
    """Why a sized server would not start or not serve what it is planned for, with the fix; `slack` is what it
    had to leave free, `margin` the stack's safety margin."""
    problems = _explain(server, free_before, slack)
    capacity = server.budget.capacity
    if capacity is not None and server.budget.ok and capacity.max_concurrency < request.target_requests:
        problems.append(
            Problem(
                f"{request.config_path}.maxModelLen",
                f"KV cache holds {capacity.max_concurrency:.2f} concurrent max-length requests, "
                f"fewer than the {request.target_requests:g} this server is planned for "
                f"(colo:budget.{'embeddingConcurrency' if request.spec.pooling else 'llmMinConcurrency'}); "
                f"lower maxModelLen or use kvCacheDtype: fp8{_margin_fix(server, margin)}",
            )
        )
    return problems


def size_in_order(
    gpu: GpuSpec, requests: list[ServerRequest], margin: int, *, last_takes_rest: bool = True
) -> tuple[list[ServerPlan], list[Problem]]:
    """The servers on one GPU in start order, each against what the earlier ones left free; with
    `last_takes_rest` the last one gets the most that leaves the slack, else every one is sized for its own
    target (the companions of a tensor-parallel LLM, whose ranks start after them)."""
    free = gpu.cuda_total_bytes
    servers: list[ServerPlan] = []
    problems: list[Problem] = []
    for index, request in enumerate(requests):
        last = last_takes_rest and index == len(requests) - 1
        slack = slack_beside(servers, margin) if last else margin
        server = size_server(request, free, slack, last)
        problems += server_problems(server, request, free, slack, margin)
        servers.append(server)
        free -= server.budget.footprint_bytes
    return servers, problems


def finish_gpu(gpu: GpuSpec, servers: list[ServerPlan], margin: int, problems: list[Problem]) -> GpuPlan:
    """One GPU's plan from its sized servers: the notes of a shared GPU, and every server's restart checked."""
    if len(servers) > 1:
        servers = [replace(s, notes=(*s.notes, *_shared_gpu_notes(s))) for s in servers]
    plan = GpuPlan(gpu, tuple(servers), margin, tuple(problems))
    if any(p.path.endswith(".gpuMemoryUtilization") for p in problems):
        return plan  # an override already refused: its restart would only repeat the finding
    return replace(plan, problems=(*problems, *restart_problems(plan)))


def plan_gpu(gpu: GpuSpec, requests: list[ServerRequest], safety_margin_mib: int) -> GpuPlan:
    """Size the servers in start order; the last one takes what is left. Where pools are sized after
    warm-up, the slack left for the last server is also every earlier server's vLLM margin, so that each can
    restart into its own slot."""
    margin = safety_margin_mib * MIB
    servers, problems = size_in_order(gpu, requests, margin)
    return finish_gpu(gpu, servers, margin, problems)
