"""One vLLM process, sized the way vLLM sizes itself at startup (V1 engine, one GPU rank).

The steps follow `Worker.init_device` → `load_model` → `determine_available_memory` → KV cache config →
`capture_model`:

    snapshot after the process's own CUDA context:   free_seen = free_before − context
    startup check (`request_memory`):                 requested = total × util (rounded up where the release does)  ≤ free_seen
    KV pool (`memory_profiling`):                     kv = requested − weights − activation − non_torch
                                                           − cudagraph_estimate (when the release subtracts it)
    footprint seen by nvidia-smi:                     context + requested + graphs outside the budget + post

Encoder-only models have no KV cache, so vLLM skips the profiling step: util only gates the startup check,
and the footprint is context + weights + activations + non-torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil

from colo.catalog import GIB, MIB, GpuSpec
from colo.catalog.architecture import ModelArchitecture
from colo.catalog.vllm_rules import VllmRules, constants
from colo.plan.activation import activation_peak
from colo.plan.cudagraph import GraphPlan, default_capture_sizes, graph_memory
from colo.plan.engine_limits import EngineLimits
from colo.plan.kv_cache import KvCapacity, KvGeometry, kv_bytes_for_requests, kv_capacity, kv_geometry
from colo.plan.weights import estimate_weights


@dataclass(frozen=True)
class ProcessSpec:
    """Everything vLLM's startup sizing depends on, for one process."""

    arch: ModelArchitecture
    gpu: GpuSpec
    rules: VllmRules
    vllm_version: str
    limits: EngineLimits
    pooling: bool = False
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    capture_sizes: tuple[int, ...] | None = None  # None: the release's defaults
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    tensor_parallel_size: int = 1

    @property
    def utilization(self) -> float:
        return self.gpu_memory_utilization or self.rules.default_gpu_memory_utilization

    @property
    def loads_mtp(self) -> bool:
        return self.speculative_method == "mtp"

    @property
    def decode_query_len(self) -> int:
        return 1 + self.num_speculative_tokens

    @property
    def v2_model_runner(self) -> bool:
        a = self.arch
        return self.rules.runs_v2_model_runner(
            architecture=a.architecture,
            generate=not self.pooling,
            moe=a.moe is not None,
            hybrid=a.is_hybrid_linear,
            quantized=a.quantization != "none",
        )

    @property
    def graph_estimate_subtracted(self) -> bool:
        """Whether `determine_available_memory` takes the CUDA-graph estimate off the KV pool."""
        if self.enforce_eager or self.kv_cache_memory_bytes is not None:
            return False
        if not self.rules.cudagraph_estimate_subtracted:
            return False
        return not (self.rules.v2_estimate_zero and self.v2_model_runner)


@dataclass(frozen=True)
class StartupCheck:
    free_bytes: int
    requested_bytes: int
    ok: bool
    message: str


@dataclass(frozen=True)
class ProcessBudget:
    spec: ProcessSpec
    context_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    graphs: GraphPlan
    graph_estimate_in_budget: bool
    kv_bytes: int
    capacity: KvCapacity | None
    startup: StartupCheck
    post_profile_bytes: int
    errors: tuple[str, ...] = field(default_factory=tuple)

    @property
    def footprint_bytes(self) -> int:
        """Memory nvidia-smi attributes to this process once it serves."""
        if self.capacity is None:  # no KV cache: nothing is reserved up to `requested`
            core = self.weights_bytes + self.activation_bytes + self.non_torch_bytes + self.graphs.bytes
        elif self.spec.kv_cache_memory_bytes is not None:
            core = (
                self.weights_bytes
                + self.activation_bytes
                + self.non_torch_bytes
                + self.kv_bytes
                + self.graphs.bytes
            )
        else:
            core = self.requested_bytes + (0 if self.graph_estimate_in_budget else self.graphs.bytes)
        return self.context_bytes + core + self.post_profile_bytes

    @property
    def ok(self) -> bool:
        return self.startup.ok and not self.errors


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def requested_memory(total: int, util: float, rules: VllmRules) -> int:
    product = total * util
    return ceil(product) if rules.requested_memory_ceil else int(product)


def geometry_for(spec: ProcessSpec) -> KvGeometry | None:
    draft_layers = spec.arch.mtp_layers if spec.loads_mtp else 0
    return kv_geometry(
        spec.arch,
        spec.kv_cache_dtype,
        num_speculative_tokens=spec.num_speculative_tokens,
        mtp_draft_layers=draft_layers,
    )


def capture_sizes_for(spec: ProcessSpec) -> list[int]:
    if spec.enforce_eager:
        return []
    if spec.capture_sizes is not None:
        return sorted({s for s in spec.capture_sizes if s <= spec.limits.max_num_batched_tokens})
    return default_capture_sizes(
        spec.rules,
        max_num_seqs=spec.limits.max_num_seqs,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
    )


def size_process(spec: ProcessSpec, *, free_before_bytes: int | None = None) -> ProcessBudget:
    """Size one process as vLLM would, given the free memory it finds on the GPU when it starts."""
    consts = constants()
    gpu = spec.gpu
    total = gpu.cuda_total_bytes
    tp = spec.tensor_parallel_size
    context = gpu.context_bytes + (256 * MIB if tp > 1 else 0)  # NCCL communicators beyond TP1
    if spec.rules.cublas_in_baseline:  # 0.33 creates the cuBLAS handles before its snapshot
        context += gpu.cublas_bytes
    free_before = total if free_before_bytes is None else free_before_bytes
    free_seen = free_before - context

    requested = requested_memory(total, spec.utilization, spec.rules)
    startup_ok = free_seen >= requested
    message = (
        ""
        if startup_ok
        else spec.rules.startup_error(
            free_gib=free_seen / GIB,
            total_gib=total / GIB,
            util=spec.utilization,
            requested_gib=requested / GIB,
        )
    )

    weights = estimate_weights(
        spec.arch,
        pooling=spec.pooling,
        load_mtp=spec.loads_mtp,
        tensor_parallel_size=tp,
        gpu=spec.gpu,
        vllm_version=spec.vllm_version,
    ).bytes
    peak = activation_peak(
        spec.arch,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        max_num_seqs=spec.limits.max_num_seqs,
        pooling=spec.pooling,
        sampler_bytes_per_logit=consts.sampler_bytes_per_logit_sorting
        if spec.rules.topk_topp_sorts
        else consts.sampler_bytes_per_logit,
        num_speculative_tokens=spec.num_speculative_tokens,
    )
    activation = peak.peak_bytes // tp
    growth_mib = (
        consts.non_torch_growth_mib_cublas_in_baseline
        if spec.rules.cublas_in_baseline
        else consts.non_torch_growth_mib
    )
    non_torch = growth_mib * MIB + (256 * MIB if tp > 1 else 0)
    graphs = graph_memory(
        spec.arch,
        spec.rules,
        capture_sizes_for(spec),
        max_num_seqs=spec.limits.max_num_seqs,
        decode_query_len=spec.decode_query_len,
        kib_per_graph_layer=consts.cudagraph_kib_per_graph_layer_hybrid
        if spec.arch.is_hybrid_linear
        else consts.cudagraph_kib_per_graph_layer,
    )
    in_budget = spec.graph_estimate_subtracted
    post = consts.post_profile_mib * MIB

    if spec.kv_cache_memory_bytes is not None:
        kv = spec.kv_cache_memory_bytes
    else:
        kv = requested - weights - activation - non_torch - (graphs.bytes if in_budget else 0)
    capacity, errors = _kv_pool(spec, kv)
    return ProcessBudget(
        spec,
        context,
        requested,
        weights,
        activation,
        non_torch,
        graphs,
        in_budget and capacity is not None,
        kv if capacity is not None else 0,
        capacity,
        StartupCheck(free_seen, requested, startup_ok, message),
        post,
        tuple(errors),
    )


def _kv_pool(spec: ProcessSpec, kv: int) -> tuple[KvCapacity | None, list[str]]:
    """Blocks and reported figures for a KV pool of `kv` bytes, and vLLM's errors when it cannot serve.

    Models without KV-cache layers skip this step in vLLM (`_initialize_kv_caches`): no pool, no errors.
    """
    geometry = geometry_for(spec)
    if geometry is None:
        return None, []
    limits = spec.limits
    capacity = kv_capacity(
        geometry,
        max(kv, 0),
        max_model_len=limits.max_model_len,
        max_num_batched_tokens=limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
        tokens_from_concurrency=spec.rules.kv_tokens_from_concurrency,
        sliding_inflight_batches=spec.rules.sliding_inflight_batches,
    )
    if kv <= 0:
        return capacity, [
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        ]
    needed = kv_bytes_for_requests(
        geometry,
        1,
        max_model_len=limits.max_model_len,
        max_num_batched_tokens=limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
        null_block_reserved=spec.rules.null_block_reserved,
        sliding_inflight_batches=spec.rules.sliding_inflight_batches,
    )
    if needed > kv:
        return capacity, [
            f"ValueError: To serve at least one request with the model's max seq len "
            f"({limits.max_model_len}), ({_gib(needed)} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({_gib(kv)} GiB)."
        ]
    return capacity, []
