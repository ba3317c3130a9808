"""One vLLM process, sized the way vLLM sizes itself at startup (V1 engine, one GPU rank).

The steps follow `Worker.init_device` → `load_model` → `determine_available_memory` → KV cache config →
`capture_model`. From 0.9.1 every process budgets for itself (per-instance accounting):

    snapshot after the process's own CUDA context:   free_seen = free_before − context
    startup check (`request_memory`):                 requested = total × util (rounded up where the release does)  ≤ free_seen
    KV pool (`memory_profiling`):                     kv = requested − weights − activation − non_torch
                                                           − cudagraph_estimate (when the release subtracts it)
    footprint seen by nvidia-smi:                     context + requested + graphs outside the budget + post

Up to 0.9.0 the budget is global (`vllm 0.8.0 v1/worker/gpu_worker.py::Worker.determine_available_memory`):
there is no startup check, and `total × util` caps everything on the device, other processes included:

    KV pool:                                          kv = total × util − others − context − non_torch − weights − activation
    footprint:                                        total × util − others + graphs + post

From 0.34 the extensible KV cache sizes the pool after warm-up and CUDA-graph capture unless
--kv-cache-memory-bytes pins it (`vllm 0.34.0 v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes`); there
is no startup check, and the utilization (1.0 when unset) is only a cap:

    non_kv:                                           weights + non_torch + graphs (as captured) + persistent
    KV pool:                                          kv = min(requested − non_kv, free_seen − non_kv − margin)
                                                           − transient,   margin = max(1 GiB, 0.75 × transient)
    footprint:                                        context + non_kv + kv + transient (≤ context + requested)

At tensor parallel N every figure is one rank's; tp_comm says what the communicators add, and when.
Encoder-only models have no KV cache, so vLLM skips the profiling step: util only gates the startup check,
and the footprint is context + weights + activations + non-torch. So have the pooling decoders a release builds
with bidirectional attention (colo.vllm.process.attention_type).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil
from typing import Literal

from colo.catalog import GIB, MIB, GpuSpec
from colo.vllm.calibration import AppliedCalibration
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.process.activation import (
    ActivationPeak,
    activation_peak,
    encoder_profile_kept_bytes,
    profile_workspace_bytes,
    sampler_profile,
    sizing_step_bytes,
)
from colo.vllm.process.cudagraph import GraphPlan, GraphSetting, default_capture_sizes, graph_memory
from colo.vllm.process.engine_limits import EngineLimits
from colo.vllm.process.kv_cache import (
    KvCapacity,
    KvGeometry,
    committed_blocks,
    kv_bytes_for_requests,
    kv_capacity,
    kv_geometry,
    max_model_len_for,
)
from colo.vllm.process.mm_profile import encoder_profile
from colo.vllm.process.non_torch import non_torch_growth
from colo.vllm.process.pipeline import Stage
from colo.vllm.process.tp_comm import TpCommunication, tp_communication
from colo.vllm.process.weights import estimate_weights
from colo.vllm.rules import MeasuredConstants, VllmRules, measured_constants


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
    # --dtype as the server sets it (None: not passed); `arch.dtype` is the dtype vLLM resolves
    dtype: str | None = None
    enforce_eager: bool = False
    capture_sizes: tuple[int, ...] | None = None  # None: the release's defaults
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    tensor_parallel_size: int = 1
    # official images ship FlashInfer; a plain pip install before 0.14 does not. The sampler's path: False also
    # where the server turns the FlashInfer sampler off
    flashinfer_installed: bool = True
    # the image carries FlashInfer, whatever the sampler takes: Hopper's block-FP8 GEMM (colo.vllm.process.cudagraph)
    flashinfer_in_image: bool = True
    # the build's PyTorch ("2.11.0+cu130"): its libraries' non-torch state is measured per build (None: unknown)
    torch_release: str | None = None
    # --enable-prefix-caching as the server sets it (None: the release's default), for recurrent-state pages
    prefix_caching: bool | None = None
    # TP ranks reach each other directly (NVLink, PCIe P2P); False: NCCL stages through host memory
    peer_to_peer: bool = True
    # the ranks share one NVSwitch board (HGX: p4d, p4de, p5, p5e, p5en), where NCCL uses NVLink SHARP
    nvswitch: bool = False
    # every rank one NVLink hop from every other (vLLM's `is_fully_connected`); False: PCIe only, where vLLM's
    # custom all-reduce runs for two ranks at most
    nvlink: bool = True
    # Multimodal checkpoints: --language-model-only, --limit-mm-per-prompt, --skip-mm-profiling
    language_model_only: bool = False
    mm_limits: tuple[tuple[str, int], ...] = ()  # unlisted modalities allow 999 items
    skip_mm_profiling: bool = False
    # One pipeline stage of `stage.size` (None: the whole model on this rank's GPU)
    stage: Stage | None = None
    # None: the catalog's measured constants; a calibration (colo.config.calibration) supplies observed ones
    constants: MeasuredConstants | None = None
    calibration: AppliedCalibration | None = None  # what a calibration changed, for the plan to show

    @property
    def measured_kv(self) -> bool:
        """0.34's extensible KV cache sizes the pool after warm-up; --kv-cache-memory-bytes turns it off
        (`vllm 0.34.0 config/vllm.py::_resolve_extensible_kv_cache`)."""
        return self.rules.measured_kv_sizing is not None and self.kv_cache_memory_bytes is None

    @property
    def utilization(self) -> float:
        """The flag, or `resolved_gpu_memory_utilization`: 1.0 under the extensible KV cache, else the
        release's default (`vllm 0.34.0 config/cache.py`)."""
        if self.gpu_memory_utilization:
            return self.gpu_memory_utilization
        measured = self.rules.measured_kv_sizing
        if measured is not None and self.kv_cache_memory_bytes is None:
            return measured.default_gpu_memory_utilization
        return self.rules.default_gpu_memory_utilization

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
    def vision_tower_built(self) -> bool:
        """The tower is built unless --language-model-only (0.17+) or every tower modality's limit is 0
        (`vllm 0.16.0 model_executor/models/interfaces.py::_mark_tower_model`)."""
        vision = self.arch.vision
        if not self.arch.vision_parameters or vision is None:
            return self.arch.vision_parameters > 0
        if self.language_model_only:
            return False
        return not (self.rules.zero_mm_limits_skip_tower and self._no_tower_inputs)

    @property
    def _no_tower_inputs(self) -> bool:
        limits = dict(self.mm_limits)
        vision = self.arch.vision
        return vision is not None and all(limits.get(m, 999) == 0 for m in vision.modalities)

    @property
    def mm_encoder_profiled(self) -> bool:
        """`profile_run` first runs the encoder on one maximum-size item unless --skip-mm-profiling (0.10.1+) or
        no tower input is allowed; the V2 runner only on the first pipeline stage (`vllm 0.29.0
        v1/worker/gpu/model_runner.py::profile_run`)."""
        later_stage = self.stage is not None and not self.stage.first
        if later_stage and self.v2_model_runner:
            return False
        return self.vision_tower_built and not self.skip_mm_profiling and not self._no_tower_inputs

    @property
    def pipeline_parallel_size(self) -> int:
        return self.stage.size if self.stage else 1

    @property
    def graph_estimate_subtracted(self) -> bool:
        """Whether `determine_available_memory` takes the CUDA-graph estimate off the KV pool (under the
        extensible KV cache the estimate is 0: the capture is measured after warm-up)."""
        if self.enforce_eager or self.kv_cache_memory_bytes is not None or self.measured_kv:
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
class MeasuredSizing:
    """How 0.34's extensible KV cache sized the pool after warm-up: the quantities of
    `measure_kv_cache_bytes` and of its "Memory after warmup" log line."""

    reserved_bytes: int  # the profile's figure, the address range reserved ("Available KV cache memory")
    non_kv_bytes: int  # everything the process holds after warm-up and capture but the KV cache
    transient_bytes: int  # max(transient peak, torch reservation growth): kept free for activations
    margin_bytes: int  # max(1 GiB, 0.75 × transient peak): kept free of the device on the free-memory side
    free_seen_bytes: int  # free memory at the process's startup snapshot (its neighbours' memory excluded)
    bound: Literal["requested", "free"]  # which side of the min() sized the pool
    available_bytes: int  # the pool before it is rounded to committed blocks (negative: none)
    physical_bytes: int  # the committed blocks' pages, rounded up to granules per segment

    @property
    def free_after_warmup_bytes(self) -> int:
        """ "Memory after warmup: X GiB free": the snapshot's free memory less non_kv and the null block."""
        return self.free_seen_bytes - self.non_kv_bytes

    def slack_for(self, requested: int) -> int:
        """What the requested side leaves free beyond this process once it serves (its neighbours' memory
        excluded): vLLM sizes from the free side once this is below the margin."""
        return self.free_seen_bytes - requested


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
    post_profile_bytes: int  # held beyond the budget once serving: warm-up leftovers, a V2 runner's growth
    errors: tuple[str, ...] = field(default_factory=tuple)
    others_bytes: int = 0  # what other processes hold when this one profiles (counts under global accounting)
    communication: TpCommunication = field(default_factory=TpCommunication)
    measured: MeasuredSizing | None = None  # 0.34+: the pool sized after warm-up
    # the graph estimate's executables the driver keeps from inside the profiling window (0.18-0.26): counted in
    # non_torch_bytes, and the capture reuses them, so they are not outside the budget a second time
    graph_profile_in_non_torch: int = 0

    @property
    def sizing(self) -> Literal["profiled", "measured", "pinned"]:
        """How vLLM sizes this pool: from the profile, after warm-up (0.34+), or as --kv-cache-memory-bytes."""
        if self.measured is not None:
            return "measured"
        return "pinned" if self.spec.kv_cache_memory_bytes is not None else "profiled"

    @property
    def global_accounting(self) -> bool:
        return self.spec.rules.kv_accounting == "global"

    @property
    def decode_state_blocks(self) -> int | None:
        """The blocks vLLM holds this hybrid model's decode batch against (`decode_state_blocks`)."""
        return decode_state_blocks(self.spec, self.capacity, self.graphs, self.measured)

    @property
    def graphs_outside_budget_bytes(self) -> int:
        """Graph memory beyond what vLLM's budget took off the KV pool: all of it where the release subtracts
        no estimate, else what the graphs hold beyond the estimate (negative where vLLM over-estimated); none
        where the pool is sized after warm-up, which measures the captured graphs inside the request."""
        if self.measured is not None:
            return 0
        return (
            self.graphs.resident_bytes
            - self.graph_profile_in_non_torch
            - (self.graphs.estimate_bytes if self.graph_estimate_in_budget else 0)
        )

    @property
    def resident_beyond_request_bytes(self) -> int:
        """What this process holds beyond `requested` once it serves: its context and what vLLM's budget does
        not count (per-instance), or, under global accounting, minus what other processes hold (their memory
        is inside `total × util`)."""
        graphs_outside = self.graphs_outside_budget_bytes
        if self.global_accounting:
            return graphs_outside + self.post_profile_bytes - self.others_bytes
        return self.context_bytes + graphs_outside + self.post_profile_bytes + self.communication.unbudgeted

    @property
    def footprint_bytes(self) -> int:
        """Memory nvidia-smi attributes to this process once it serves."""
        if self.measured is not None and self.capacity is not None:
            m = self.measured
            core = m.non_kv_bytes + m.physical_bytes + m.transient_bytes
            grown = self.context_bytes + core + self.post_profile_bytes + self.communication.unbudgeted
            # measure_kv_cache_blocks caps torch's caching allocator to leave KV_CACHE_NON_TORCH_RESERVE_BYTES of
            # what was free then: whatever grows under load stops there (it frees cached blocks instead)
            rules = self.spec.rules.measured_kv_sizing
            assert rules is not None
            capped = self.context_bytes + m.free_seen_bytes - rules.torch_cap_reserve_mib * MIB
            return min(grown, capped)
        if self.capacity is None:  # no KV cache: nothing is reserved up to `requested`
            core = (
                self.weights_bytes + self.activation_bytes + self.non_torch_bytes + self.graphs.resident_bytes
            )
        elif self.spec.kv_cache_memory_bytes is not None:
            core = (
                self.weights_bytes
                + self.activation_bytes
                + self.non_torch_bytes
                + self.kv_bytes
                + self.graphs.resident_bytes
            )
        else:
            return self.requested_bytes + self.resident_beyond_request_bytes
        return self.context_bytes + core + self.post_profile_bytes + self.communication.unbudgeted

    @property
    def weights_fit(self) -> bool:
        return self.weights_bytes <= self.spec.gpu.cuda_total_bytes

    @property
    def ok(self) -> bool:
        return self.startup.ok and not self.errors


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def requested_memory(total: int, util: float, rules: VllmRules) -> int:
    product = total * util
    return ceil(product) if rules.requested_memory_ceil else int(product)


def geometry_for(spec: ProcessSpec, *, whole_model: bool = False) -> KvGeometry | None:
    """The KV geometry of the spec's rank: of its pipeline stage, or of every layer (`whole_model`)."""
    draft_layers = spec.arch.mtp_layers if spec.loads_mtp else 0
    return kv_geometry(
        spec.arch,
        spec.kv_cache_dtype,
        num_speculative_tokens=spec.num_speculative_tokens,
        mtp_draft_layers=draft_layers,
        tensor_parallel_size=spec.tensor_parallel_size,
        rules=spec.rules,
        stage=None if whole_model else spec.stage,
        prefix_caching=spec.prefix_caching,
        pooling=spec.pooling,
    )


def check_geometry_for(spec: ProcessSpec) -> KvGeometry | None:
    """What `_check_enough_kv_cache_memory` holds one request against: the stage's own layers, or in 0.14-0.16
    every layer of the model against the smallest stage pool (`vllm 0.14.0 v1/core/kv_cache_utils.py::
    get_kv_cache_configs`)."""
    whole = spec.pipeline_parallel_size > 1 and spec.rules.pp_kv_check == "whole_model_min_stage"
    return geometry_for(spec, whole_model=whole)


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


def _startup(spec: ProcessSpec, free_seen: int, requested: int) -> StartupCheck:
    """`Worker.init_device` refuses to start when the free memory is below the request (0.9.1+), except under
    the extensible KV cache, where the request is only a cap (`vllm 0.34.0 v1/worker/utils.py::request_memory`)."""
    ok = free_seen >= requested or not spec.rules.startup_check or spec.measured_kv
    message = (
        ""
        if ok
        else spec.rules.startup_error(
            free_gib=free_seen / GIB,
            total_gib=spec.gpu.cuda_total_bytes / GIB,
            util=spec.utilization,
            requested_gib=requested / GIB,
        )
    )
    return StartupCheck(free_seen, requested, ok, message)


def _activation(spec: ProcessSpec, consts: MeasuredConstants) -> ActivationPeak:
    rows = min(spec.limits.max_num_seqs, spec.limits.max_num_batched_tokens)
    encoder = _encoder_share(spec)
    sampler = sampler_profile(
        spec.rules,
        consts.sampler_bytes_per_logit,
        rows=rows,
        v2_runner=spec.v2_model_runner,
        speculative=spec.num_speculative_tokens > 0,
        sm_count=spec.gpu.sm_count,
        flashinfer_installed=spec.flashinfer_installed,
        model_dtype_bytes=spec.arch.dtype_bytes,
    )
    return activation_peak(
        spec.arch,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        max_num_seqs=spec.limits.max_num_seqs,
        pooling=spec.pooling,
        sampler=sampler,
        tensor_parallel_size=spec.tensor_parallel_size,
        mm_kept_bytes=encoder.kept_bytes,
        mm_encoder_bytes=encoder.peak_bytes,
        stage=spec.stage,
        compiled=not spec.enforce_eager,
        workspace_bytes=profile_workspace_bytes(spec.rules, spec.gpu.compute_capability),
    )


@dataclass(frozen=True)
class _EncoderShare:
    kept_bytes: int = 0  # what the encoder profile keeps alive through the text pass
    peak_bytes: int = 0  # the tower's own transient peak, which comes first


def _encoder_share(spec: ProcessSpec) -> _EncoderShare:
    """The multimodal encoder's part of the profile: the batch of maximum-size items vLLM profiles it with
    (colo.vllm.process.mm_profile), or, for a tower that module does not size, the one item colo read before."""
    if not spec.mm_encoder_profiled:
        return _EncoderShare()
    profile = encoder_profile(
        spec.arch,
        max_model_len=spec.limits.max_model_len,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        max_num_seqs=spec.limits.max_num_seqs,
        mm_limits=dict(spec.mm_limits),
        tensor_parallel_size=spec.tensor_parallel_size,
        items_rule=spec.rules.mm_profile_batch,
    )
    if not profile.sized:
        return _EncoderShare(encoder_profile_kept_bytes(spec.arch))
    return _EncoderShare(profile.kept_bytes, profile.peak_bytes)


def _communication(spec: ProcessSpec, consts: MeasuredConstants) -> TpCommunication:
    sizes = consts.tp_communication_mib
    return tp_communication(
        spec.rules,
        sizes.peer_to_peer if spec.peer_to_peer else sizes.host_staged,
        spec.gpu,
        nvswitch=spec.nvswitch,
        nvlink=spec.nvlink,
        tensor_parallel_size=spec.tensor_parallel_size,
        moe=spec.arch.moe is not None,
        pooling=spec.pooling,
        eager=spec.enforce_eager,
        hidden=spec.arch.hidden_size,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        element=spec.arch.dtype_bytes,
        stage=spec.stage,
    )


def _graphs(spec: ProcessSpec, consts: MeasuredConstants) -> GraphPlan:
    stage = spec.stage
    arch = spec.arch if stage is None else replace(spec.arch, num_layers=stage.layers)  # its own layers
    setting = GraphSetting(
        max_num_seqs=spec.limits.max_num_seqs,
        decode_query_len=spec.decode_query_len,
        pooling=spec.pooling,
        compute_capability=spec.gpu.compute_capability,
        tensor_parallel_size=spec.tensor_parallel_size,
        v2_runner=spec.v2_model_runner,
        vllm_version=spec.vllm_version,
        flashinfer=spec.flashinfer_in_image,
        # models without a KV cache skip determine_available_memory, and with it the graph profile (§9)
        profiled=graph_profile_blocks(spec) > 0 and geometry_for(spec) is not None,
    )
    return graph_memory(arch, spec.rules, capture_sizes_for(spec), setting, consts)


GRAPH_PROFILE_OOM = "torch.OutOfMemoryError: CUDA out of memory while profiling CUDA-graph memory"


def graph_profile_blocks(spec: ProcessSpec) -> int:
    """Blocks of `_init_minimal_kv_cache_for_profiling`: the largest capture size (0.18-0.25), or the smaller of
    it and max_num_seqs (0.26+, `vllm 0.26.0 v1/worker/gpu_model_runner.py`); 0 when no graph is profiled."""
    sizes = capture_sizes_for(spec)
    rule = spec.rules.graph_profile_min_blocks
    stub = spec.v2_model_runner and spec.rules.v2_estimate_zero  # V2's profile_cudagraph_memory returns 0
    if rule == "none" or not sizes or stub or spec.kv_cache_memory_bytes is not None or spec.measured_kv:
        return 0
    largest = max(sizes)
    return min(spec.limits.max_num_seqs, largest) if rule == "min_seqs_capture" else largest


def graph_profile_kv_bytes(spec: ProcessSpec) -> int:
    """The temporary KV cache the CUDA-graph estimate allocates after the weights and frees again."""
    geometry = geometry_for(spec)
    return graph_profile_blocks(spec) * geometry.bytes_per_block if geometry else 0


def _after_startup_bytes(spec: ProcessSpec, consts: MeasuredConstants) -> int:
    """What the process holds beyond its budget once it serves: warm-up leftovers and, for a V2-runner generate
    server, what it grows by under load (rules.yaml v2_serving_growth_mib, measured)."""
    # Under the extensible KV cache (0.34+) vLLM keeps its sizing steps' transient free inside the request and
    # caps torch's allocator at what is then free less 512 MiB; whether those steps cover the growth measured
    # on 0.22 under load is not known until a 0.34 server is measured, so the slot still holds it.
    grows = spec.v2_model_runner and not spec.pooling
    return (consts.post_profile_mib + (consts.v2_serving_growth_mib if grows else 0)) * MIB


def size_process(spec: ProcessSpec, *, free_before_bytes: int | None = None) -> ProcessBudget:
    """Size one process as vLLM would, given the free memory it finds on the GPU when it starts."""
    consts = spec.constants or measured_constants()
    gpu = spec.gpu
    total = gpu.cuda_total_bytes
    communication = _communication(spec, consts)
    context = gpu.context_bytes + communication.before_snapshot
    if spec.rules.cublas_in_baseline:  # 0.33 creates the cuBLAS handles before its snapshot
        context += gpu.cublas_bytes
    free_before = total if free_before_bytes is None else free_before_bytes
    others = total - free_before
    requested = requested_memory(total, spec.utilization, spec.rules)
    startup = _startup(spec, free_before - context, requested)

    weights = estimate_weights(
        spec.arch,
        pooling=spec.pooling,
        load_mtp=spec.loads_mtp,
        load_vision=spec.vision_tower_built,
        tensor_parallel_size=spec.tensor_parallel_size,
        gpu=spec.gpu,
        vllm_version=spec.vllm_version,
        stage=spec.stage,
        max_model_len=spec.limits.max_model_len,
    ).bytes
    peak = _activation(spec, consts)
    activation = peak.peak_bytes
    graphs = _graphs(spec, consts)
    growth = non_torch_growth(
        spec.rules,
        consts,
        torch_release=spec.torch_release,
        graph_profile_executable_bytes=graphs.profile_executable_bytes,
    )
    non_torch = growth.total_bytes + communication.in_budget
    in_budget = spec.graph_estimate_subtracted

    if spec.kv_cache_memory_bytes is not None:
        kv = spec.kv_cache_memory_bytes
    elif spec.rules.kv_accounting == "global":
        kv = requested - others - context - non_torch - weights - activation
    else:
        kv = requested - weights - activation - non_torch - (graphs.estimate_bytes if in_budget else 0)
    measured = None
    if spec.measured_kv and geometry_for(spec) is not None:
        non_kv = weights + non_torch + graphs.resident_bytes + peak.kept_bytes
        measured = _measured_sizing(
            spec, peak, reserved=kv, requested=requested, free_seen=free_before - context, non_kv=non_kv
        )
        kv = _committed_bytes(spec, measured)
    capacity, errors = _kv_pool(spec, kv, weights, measured)
    # in vLLM's order: the graph profile's temporary cache (determine_available_memory), then the state
    # blocks against the batch (initialize_kv_cache)
    errors = (
        errors
        or _graph_profile_oom(spec, weights, non_torch, free_before - context)
        or _mamba_seqs_error(spec, capacity, graphs, measured)
    )
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
        startup,
        _after_startup_bytes(spec, consts),
        tuple(errors),
        others if spec.rules.kv_accounting == "global" else 0,
        communication,
        measured,
        growth.graph_profile_bytes,
    )


def _measured_sizing(
    spec: ProcessSpec, peak: ActivationPeak, *, reserved: int, requested: int, free_seen: int, non_kv: int
) -> MeasuredSizing:
    """`measure_kv_cache_bytes` (0.34): the request less what the process holds after warm-up and capture,
    capped by the device's free memory less a margin, less the transient kept free. The transient is the
    larger of the profile's (`transient_peak_headroom`, the allocated peak above what stays allocated) and the
    KV-sizing warm-up step's, which generate models run and pooling models skip
    (`run_mixed_prefill_decode_warmup` returns at once for them). Torch's reservation growth over a sizing step
    is taken as its allocated peak: fragmentation beyond it is not modelled."""
    rules = spec.rules.measured_kv_sizing
    assert rules is not None
    transient = peak.peak_bytes - peak.kept_bytes
    if not spec.pooling:
        transient = max(
            transient,
            sizing_step_bytes(
                spec.arch,
                max_num_batched_tokens=spec.limits.max_num_batched_tokens,
                max_model_len=spec.limits.max_model_len,
                forward_bytes=peak.forward_bytes,
            ),
        )
    margin = max(rules.margin_floor_mib * MIB, int(transient * rules.margin_fraction))
    requested_side = requested - non_kv
    free_side = free_seen - non_kv - margin
    available = min(requested_side, free_side) - transient
    physical = _physical_bytes(spec, _blocks_within(spec, available, reserved))
    return MeasuredSizing(
        reserved_bytes=reserved,
        non_kv_bytes=non_kv,
        transient_bytes=transient,
        margin_bytes=margin,
        free_seen_bytes=free_seen,
        bound="requested" if requested_side <= free_side else "free",
        available_bytes=available,
        physical_bytes=physical,
    )


def _blocks_within(spec: ProcessSpec, available: int, reserved: int) -> int:
    """Blocks whose granule-rounded pages fit `available`, never more than the reservation holds
    (`finalize_extensible_kv_cache`: min of the measured count and the reserved capacity)."""
    geometry = geometry_for(spec)
    rules = spec.rules.measured_kv_sizing
    assert geometry is not None and rules is not None
    blocks = committed_blocks(geometry, available, rules.granule_mib * MIB)
    return max(0, min(blocks, reserved // geometry.bytes_per_block))


def _physical_bytes(spec: ProcessSpec, blocks: int) -> int:
    """`physical_bytes_for`: every segment's pages rounded up to whole granules."""
    geometry = geometry_for(spec)
    rules = spec.rules.measured_kv_sizing
    assert geometry is not None and rules is not None
    granule = rules.granule_mib * MIB
    page = max(b.page_bytes for b in geometry.buckets)
    segments = geometry.slots or geometry.group_size
    return segments * ceil(blocks * page / granule) * granule


def _committed_bytes(spec: ProcessSpec, measured: MeasuredSizing) -> int:
    """The committed blocks' bytes, as "N KV cache blocks (X GiB)" counts them (blocks × bytes per block)."""
    geometry = geometry_for(spec)
    assert geometry is not None
    return _blocks_within(spec, measured.available_bytes, measured.reserved_bytes) * geometry.bytes_per_block


def _not_enough_kv(spec: ProcessSpec, geometry: KvGeometry, needed: int, kv: int) -> str:
    """`geometry` is the one the check holds a request against (check_geometry_for)."""
    """`_check_enough_kv_cache_memory`'s first sentence, in the release's words and units."""
    wording = spec.rules.kv_error_wording
    model = "model's" if wording == "model_s" else "models's"
    unit = "GB" if wording == "models_gb" else "GiB"
    fit = max_model_len_for(
        geometry,
        kv,
        max_num_batched_tokens=spec.limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
        upper=spec.limits.max_model_len,
        sliding_inflight_batches=spec.rules.sliding_inflight_batches,
    )
    # The estimate joins the text in 0.9.1 (0.8.4-0.9.0 build it but drop it: a stray f-string line).
    with_estimate = fit and spec.rules.startup_check
    estimate = (
        f" Based on the available memory, the estimated maximum model length is {fit}."
        if with_estimate
        else ""
    )
    return (
        f"ValueError: To serve at least one request with the {model} max seq len "
        f"({spec.limits.max_model_len}), ({_gib(needed):.2f} {unit} KV cache is needed, which is larger than "
        f"the available KV cache memory ({_gib(kv):.2f} {unit}).{estimate}"
    )


def _more_kv_memory_hint(spec: ProcessSpec, *, after_warmup: bool) -> str:
    """`_more_kv_cache_memory_hint` (0.34): how vLLM tells the user to make room, with the extensible cache."""
    used_by = (
        "the model, its activations, CUDA graphs and warmup"
        if after_warmup
        else "the model and its activations"
    )
    graphs = (
        " CUDA graphs take less with fewer or smaller capture sizes in the compilation config."
        if after_warmup
        else ""
    )
    if spec.utilization < 1.0:
        return (
            f"The KV cache gets what is left after {used_by} within `gpu_memory_utilization`={spec.utilization}; "
            f"increase it (with the extensible KV cache it defaults to 1.0) or decrease `max_model_len` or "
            f"`max_num_seqs`.{graphs}"
        )
    return (
        f"The extensible KV cache already takes all device memory left after {used_by}; decrease "
        f"`max_model_len` or `max_num_seqs`, or the model needs a device with more memory.{graphs}"
    )


def _kv_pool(
    spec: ProcessSpec, kv: int, weights: int, measured: MeasuredSizing | None = None
) -> tuple[KvCapacity | None, list[str]]:
    """Blocks and reported figures for a KV pool of `kv` bytes, and vLLM's errors when it cannot serve.

    Models without KV-cache layers skip this step in vLLM (`_initialize_kv_caches`): no pool, no errors.
    Weights larger than the GPU fail while loading, before any KV arithmetic: that is the error then.
    Under the extensible KV cache (0.34+) one request is held against the reservation before warm-up
    (`get_kv_cache_configs`) and against the committed blocks after it (`shrink_kv_cache_configs`).
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
        concurrency_from_tokens=spec.rules.kv_concurrency_rule == "tokens_over_len",
    )
    total = spec.gpu.cuda_total_bytes
    if weights > total:
        return capacity, [
            f"weights {weights / GIB:.2f} GiB do not fit on a {total / GIB:.2f} GiB GPU "
            f"({spec.gpu.name}{f', per rank at tensor parallel {spec.tensor_parallel_size}' if spec.tensor_parallel_size > 1 else ''})"
        ]
    checks = [(kv, False)] if measured is None else [(measured.reserved_bytes, False), (kv, True)]
    for pool, after_warmup in checks:
        error = _one_request_error(spec, pool, after_warmup=after_warmup if measured else None)
        if error:
            return capacity, [error]
    return capacity, []


def _graph_profile_oom(spec: ProcessSpec, weights: int, non_torch: int, free_after_context: int) -> list[str]:
    """profile_cudagraph_memory's temporary KV cache where it does not fit beside the weights."""
    temporary = graph_profile_kv_bytes(spec)
    if not temporary or non_torch + weights + temporary <= free_after_context:
        return []
    return [
        f"{GRAPH_PROFILE_OOM}: profile_cudagraph_memory first builds a temporary KV cache of "
        f"{graph_profile_blocks(spec)} blocks ({temporary / GIB:.2f} GiB) beside {weights / GIB:.2f} GiB of "
        f"weights, with {free_after_context / GIB:.2f} GiB free"
    ]


MAMBA_SEQS_ERROR = "ValueError: max_num_seqs"


def decode_state_blocks(
    spec: ProcessSpec, capacity: KvCapacity | None, graphs: GraphPlan, measured: MeasuredSizing | None
) -> int | None:
    """The blocks 0.20+ hold a hybrid model's decode batch against when it captures FULL decode graphs: one
    recurrent-state block per decode sequence, up to max_num_seqs (`vllm 0.22.0 config/compilation.py::
    resolve_cudagraph_mode_and_sizes`, called from `initialize_kv_cache` with the pool's KVCacheConfig). Where
    the pool is sized after warm-up (0.34) that is the reservation, before warm-up shrinks it. None where the
    release, the model or the graphs make no such check."""
    geometry = geometry_for(spec)
    if not spec.rules.mamba_seqs_within_blocks or capacity is None or geometry is None or graphs.full == 0:
        return None
    if not geometry.has_recurrent_state:
        return None
    return measured.reserved_bytes // geometry.bytes_per_block if measured else capacity.num_blocks


def _mamba_seqs_error(
    spec: ProcessSpec, capacity: KvCapacity | None, graphs: GraphPlan, measured: MeasuredSizing | None
) -> list[str]:
    blocks = decode_state_blocks(spec, capacity, graphs, measured)
    seqs = spec.limits.max_num_seqs
    if blocks is None or seqs <= blocks:
        return []
    return [
        f"{MAMBA_SEQS_ERROR} ({seqs}) exceeds available Mamba cache blocks ({blocks}). Each decode sequence "
        f"requires one Mamba cache block, so CUDA graph capture cannot proceed"
    ]


def _one_request_error(spec: ProcessSpec, kv: int, *, after_warmup: bool | None) -> str | None:
    """vLLM's refusal when a pool of `kv` bytes cannot hold one max_model_len request (`after_warmup`: None
    where the release sizes from the profile, else which of 0.34's two checks this is)."""
    hint = "" if after_warmup is None else " " + _more_kv_memory_hint(spec, after_warmup=after_warmup)
    if kv <= 0:
        if after_warmup is None:
            return (
                "ValueError: No available memory for the cache blocks. Try increasing "
                "`gpu_memory_utilization` when initializing the engine."
            )
        return f"ValueError: No available memory for the cache blocks.{hint}"
    limits = spec.limits
    checked = check_geometry_for(spec)
    assert checked is not None
    needed = kv_bytes_for_requests(
        checked,
        1,
        max_model_len=limits.max_model_len,
        max_num_batched_tokens=limits.max_num_batched_tokens,
        num_speculative_tokens=spec.num_speculative_tokens,
        null_block_reserved=spec.rules.null_block_reserved,
        sliding_inflight_batches=spec.rules.sliding_inflight_batches,
    )
    if needed > kv:
        return _not_enough_kv(spec, checked, needed, kv) + hint
    return None
