"""The memory rules of each supported vLLM release, loaded from rules.yaml.

Every decision that depends on the vLLM release is a typed field of `VllmRules`, named after what vLLM calls
it; rules.yaml gives its value per release range and the source file it was read from. This module is
the only place that compares vLLM versions: everything else asks `rules_for(version)` and reads fields.

Adding a rule: one field here (with a comment saying what it decides), and its value in rules.yaml in the
first range and in each range where it changes. The loader refuses a range that lacks a field or carries a
key no field declares, naming the key and the range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Any, Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from colo.catalog.data import parse_yaml
from colo.catalog.releases import release_key as release_key  # where every release is ordered

RULES_FILE = "rules.yaml"
GIB = 1024**3


# Where ModelConfig looks for a checkpoint's dtype: the config's top level, its text config (get_text_config()),
# vision_config, encoder_config, and the dtypes of the safetensors tensors (their metadata).
DtypeKey = Literal["root", "text", "vision", "encoder", "weights"]


class VllmRulesFileError(Exception):
    """rules.yaml does not match the fields declared here; the message names the key and the range."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BatchTier(_Strict):
    """One tier of the OpenAI server's batch defaults (`EngineArgs._set_default_args_v1`, `get_batch_defaults`
    from 0.20): the first tier whose memory floor the GPU reaches, whose required device names it carries (any
    of them) and whose excluded device names it does not carry, gives the defaults."""

    min_gib: int
    devices: tuple[
        str, ...
    ] = ()  # lower-case substrings, any of which the device name must hold (0.8.0-0.8.4)
    except_devices: tuple[str, ...]  # lower-case substrings of the device name (vLLM lowers it too)
    max_num_batched_tokens: int
    max_num_seqs: int

    def applies_to(self, gpu_name: str, total_bytes: int) -> bool:
        name = gpu_name.lower()
        named = not self.devices or any(device in name for device in self.devices)
        excluded = any(device in name for device in self.except_devices)
        return total_bytes >= self.min_gib * GIB and named and not excluded


class MeasuredKvSizing(_Strict):
    """The extensible KV cache (0.34+): address space reserved at the profiled size, physical pages committed
    after warm-up and CUDA-graph capture, sized from the memory measured then
    (`vllm 0.34.0 v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes, measure_kv_cache_blocks`)."""

    # resolved_gpu_memory_utilization with the cache on (config/cache.py): a server left unset takes the card
    default_gpu_memory_utilization: float
    margin_floor_mib: int  # KV_CACHE_MARGIN_FLOOR_BYTES on CUDA: kept free beyond the transients
    margin_fraction: float  # KV_CACHE_MARGIN_FRACTION of the transient peak, when larger than the floor
    torch_cap_reserve_mib: int  # KV_CACHE_NON_TORCH_RESERVE_BYTES: torch's allocator is capped to leave it
    granule_mib: int  # utils/extensible_tensor.py::granule_size: pages are committed per segment in granules
    # a utilization in (low, 1.0) that withholds at least 1 GiB draws "gpu_memory_utilization=... caps this
    # instance" (measure_kv_cache_blocks)
    cap_warning_above: float


class BidirectionalAttention(_Strict):
    """What vLLM makes of a pooling model whose decoder it builds with bidirectional attention: every attention
    layer ENCODER_ONLY, which gives no KV cache spec (docs/vllm-memory-rules.md §9). A decoder class chooses it
    from its config's `is_causal` (vllm 0.22.0 model_executor/models/llama.py::LlamaDecoderLayer.__init__,
    qwen2.py, qwen3.py, gemma3.py: `ENCODER_ONLY` where `getattr(config, "is_causal", True)` is false); a class
    that does not read the flag keeps its KV cache whatever the config says."""

    # the names whose layers give no KV cache spec once bidirectional: no pool is allocated
    # (v1/engine/core.py::EngineCore._initialize_kv_caches: `has_kv_cache` is false)
    no_kv: tuple[str, ...]
    # the names whose bidirectional layers this release cannot build or size: the server fails to start
    fails: tuple[str, ...]
    # how `fails` fails: flash_attn_impl, FlashAttentionImpl refuses ENCODER_ONLY attention; kv_cache_spec,
    # Attention.get_kv_cache_spec asserts a DECODER layer
    failure: Literal["none", "flash_attn_impl", "kv_cache_spec"]
    # pooling classes vLLM makes bidirectional whatever the config says (it sets is_causal false itself)
    always: tuple[str, ...]

    @model_validator(mode="after")
    def _an_outcome_for_every_name(self) -> BidirectionalAttention:
        unknown = sorted(set(self.always) - set(self.no_kv) - set(self.fails))
        if unknown:
            raise ValueError(f"always names {unknown[0]}, which neither no_kv nor fails lists")
        if (self.failure == "none") != (not self.fails):
            raise ValueError("failure says how `fails` fails: none exactly when fails is empty")
        return self


class VllmRules(_Strict):
    """What changed between releases; rules.yaml cites the source of every value."""

    first: str
    last: str
    default_gpu_memory_utilization: float
    # None: the KV pool is sized from the profile (determine_available_memory); else after warm-up (0.34+),
    # unless --kv-cache-memory-bytes pins it
    measured_kv_sizing: MeasuredKvSizing | None
    default_block_size: (
        int  # CacheConfig.DEFAULT_BLOCK_SIZE: tokens a KV block holds unless a backend asks more
    )
    # --- weights: rows of an M-RoPE cos/sin cache per max_position_embeddings (MRotaryEmbedding's positions
    # factor), for the Qwen3 family (Qwen3-VL, Qwen3.5) and for every other M-RoPE model (Qwen2-VL, Qwen2.5-VL)
    mrope_cache_factor_qwen3: int
    mrope_cache_factor_other: int
    # ModernBERT's float16 cos/sin caches: one per layer (each layer builds its own RotaryEmbedding), or one per
    # distinct rope theta (get_rope's cache; docs/vllm-memory-rules.md §8)
    modernbert_rotary_caches: Literal["per_layer", "per_theta"]
    modernbert_rotary_float16: (
        bool  # those caches are float16 whatever the model dtype (else the model dtype)
    )
    # NomicBertModel (models/config.py::NomicBertModelConfig): trained_positions, max_model_len defaults to at
    # most its trained length, a longer one given is refused, and the rotary cache has that many rows;
    # model_len, max_model_len as any model's, and the cache has max_model_len rows
    nomic_context: Literal["trained_positions", "model_len"]
    # rows of a dynamic-NTK (rope_type "dynamic" with a factor) cos/sin cache: scaled, max_position x factor;
    # max_position, max_position alone (the scaling moves into the base)
    dynamic_ntk_cache_rows: Literal["scaled", "max_position"]
    # --- the KV budget (docs/vllm-memory-rules.md §1-2)
    # global: kv = total * util - everything held on the device after profiling (other processes included);
    # per_instance: kv = total * util - this process's own growth since its startup snapshot.
    kv_accounting: Literal["global", "per_instance"]
    startup_check: bool  # init_device refuses to start when free memory < total * util
    requested_memory_ceil: bool  # request_memory rounds total * util up
    cudagraph_estimate_subtracted: bool  # determine_available_memory takes the graph estimate off the KV pool
    has_kv_cache_memory_bytes: bool
    cublas_in_baseline: bool  # cuBLAS handles exist before the startup snapshot
    # profile_cudagraph_memory runs inside memory_profiling's window, so the driver memory of the graphs it
    # captures counts as non-torch growth (colo.vllm.process.non_torch)
    graph_profile_in_memory_window: bool
    # --- tensor parallelism: what the distributed init creates, and when (docs §10)
    dist_init_before_snapshot: bool  # NCCL communicators and all-reduce buffers exist before the snapshot
    nccl_cumem: bool  # NCCL's cuMem allocator is on (vLLM forced NCCL_CUMEM_ENABLE=0 before 0.10.2)
    # NVLink SHARP buffer MiB per channel and NVLS head of the NCCL the release's torch pins (read, not measured)
    nvls_mib_per_channel_head: int
    ep_group: Literal["none", "every_model", "moe_only"]  # a second NCCL communicator for the EP group
    logits_gather_creates_communicator: bool  # the dummy sampler's all-gather wakes torch's lazy NCCL group
    symm_mem_all_reduce: bool  # SymmMemCommunicator's buffer on compute capability 9.0 / 10.x
    custom_all_reduce_large_buffer: bool  # CustomAllreduce's legacy buffer is 16 MiB, not 8
    flashinfer_allreduce_workspace: Literal["none", "compiled", "always"]  # its workspace, inside the budget
    # --- the dummy sampler run (docs §11)
    sampler_path: Literal[
        "flashinfer_probs", "flashinfer_logits", "sort", "triton", "flashinfer_then_native", "triton_all_rows"
    ]
    rejection_sampler_dummy: Literal[
        "none",
        "bf16_target_softmax",
        "bf16_target_sorted",
        "two_rows_bf16_clone",
        "two_rows_fp32_clone",
        "two_rows_triton",
    ]  # the speculative branch of _dummy_sampler_run
    v2_dummy_sampler: Literal["fp32_copy", "in_place", "warmup_flashinfer"]  # the V2 runner's dummy sampler
    hidden_states_held_through_sampler: bool  # profile_run keeps the [tokens, hidden] output alive
    # VllmConfig.use_v2_model_runner defaults (generate models only, unless every model runs it):
    v2_runner_every_model: bool
    v2_runner_architectures: tuple[str, ...]  # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    v2_runner_listed_dense_unquantized_only: bool  # listed architectures, and only when not MoE or quantized
    v2_runner_every_dense_text_model: bool  # every non-hybrid model that is not MoE, and the listed MoE ones
    v2_estimate_zero: bool  # the V2 runner's profile_cudagraph_memory returns 0
    # --- CUDA graphs (docs §5, §5a)
    cudagraph_mode: Literal["PIECEWISE", "FULL_AND_PIECEWISE"]
    full_cudagraphs_for_pooling: bool  # pooling models capture FULL graphs too (vLLM keeps them PIECEWISE)
    fa3_cudagraph_splits: int  # FA3's split-KV cap under FULL graphs: its accumulators' first dim
    v2_full_graphs_on_torch_stream: bool  # the V2 runner captures FULL graphs on PyTorch's side stream
    capture_rule: Literal["fixed512", "step8", "step8_then16"]
    capture_spec_multiplier: bool
    capture_append_max_num_batched_tokens: bool
    capture_append_max_num_seqs: bool
    # profile_cudagraph_memory first builds a temporary KV cache of this many blocks (when graphs are on)
    graph_profile_min_blocks: Literal["none", "max_capture", "min_seqs_capture"]
    # --- KV cache geometry and reporting
    kv_tokens_from_concurrency: bool  # "GPU KV cache size" = int(max_concurrency * max_model_len)
    kv_concurrency_rule: Literal["tokens_over_len", "request_blocks"]
    sliding_window_kv: Literal["full", "uniform_only", "hybrid"]  # how sliding-window layers get a spec
    hybrid_group_size_ratio: (
        float  # group size = most layers of a kind if < ratio x fewest (0: always fewest)
    )
    mamba_blocks_per_request: Literal[
        "one_page", "max_model_len", "one_plus_spec", "two_plus_spec"
    ]  # MambaSpec's usage
    # an explicit --enable-prefix-caching / --no-enable-prefix-caching picks mamba cache mode "align" / "none"
    # for Gated DeltaNet hybrids (kv_cache.mamba_state_blocks)
    mamba_align_on_prefix_caching: bool
    # max_num_seqs above the KV pool's blocks is refused when a hybrid model captures FULL decode graphs (0.20+)
    mamba_seqs_within_blocks: bool
    null_block_reserved: bool
    sliding_inflight_batches: int
    kv_error_wording: Literal["models_gb", "models_gib", "model_s"]  # _check_enough_kv_cache_memory's text
    # --- engine limits
    batch_tiers: tuple[BatchTier, ...]  # in the order get_batch_defaults tests them
    max_num_seqs_capped_by_batched_tokens: bool  # max_num_seqs = min(default, max_num_batched_tokens)
    # max_num_batched_tokens where it is left to vLLM: forced_model_len, max_model_len for a model that does not
    # chunk its prefills, whatever the user gave; model_len, the same only when the user gave none; floored, the
    # tier's default, raised to max_model_len for a model that does not chunk, then at most max_num_seqs x
    # max_model_len (for every model)
    batched_tokens_default: Literal["forced_model_len", "model_len", "floored"]
    # which pooling models chunk their prefills (colo.vllm.process.engine_limits.pooling_chunks): declared_last,
    # only one whose sentence-transformers config declares LAST first (no class default); last, one whose pooling
    # (declared first, else the class's) is LAST; not_mean_step_cls, one whose pooling is neither MEAN, STEP nor
    # CLS; seq_tok, one whose sequence pooling (declared last, else the class's) is neither MEAN nor CLS and whose
    # token pooling is not STEP. Every generate model chunks; an encoder-only or non-causal pooler never does.
    pooling_chunks: Literal["declared_last", "last", "not_mean_step_cls", "seq_tok"]
    # what get_pooling_config does with a key set true that names no pooling type it knows (MAX, WEIGHTEDMEAN,
    # INCLUDE): ignored, no declared pooling (the first key set true only); raises, NotImplementedError at startup
    # where it is the first key set true; skipped, the other keys still count
    unknown_pooling: Literal["ignored", "raises", "skipped"]
    # which sentence-transformers Pooling declarations get_pooling_config reads (colo.vllm.checkpoint.pooling):
    # mode_keys, a sentence_transformers.models.Pooling module's keys set true; mode_string, also the module type
    # sentence_transformers.sentence_transformer.modules.pooling.Pooling and a string pooling_mode key's value
    st_pooling_config: Literal["mode_keys", "mode_string"]
    max_model_len_error: Literal["0.8.0", "0.10.2"]  # _get_and_verify_max_len's wording
    # get_sentence_transformer_tokenizer_config returns sentence_bert_config.json only when it also sets
    # do_lower_case; its max_seq_length then replaces the derived max_model_len
    encoder_config_needs_do_lower_case: bool
    pooling_flag: Literal["task", "runner"]  # `--task embed` before 0.10.1, `--runner pooling` after
    # which decoder pooling models get bidirectional attention, and with it no KV cache (colo.vllm.process.
    # attention_type)
    bidirectional_attention: BidirectionalAttention
    # what vLLM's automatic runner choice (no --runner; --task auto before 0.10.1) makes of a generative model
    # whose modules.json names a sentence-transformers Pooling module: embed_task, the embed task (a pooling
    # server); generate, generation (the Pooling module only picks the pooling task); pooling, the pooling runner.
    # Where it is not generate colo's LLM names generation (colo.vllm.serve_args).
    st_pooling_auto_runner: Literal["embed_task", "generate", "pooling"]
    # --- which engine runs (EngineArgs._is_v1_supported_oracle, docs §12): a V0 fallback is refused
    v1_min_compute_capability: int | None  # major*10+minor below which V1 falls back to V0
    v1_dtypes: tuple[str, ...] | None  # model dtypes V1 accepts (None: any)
    v1_refused_quantization: tuple[str, ...]
    v1_fp8_kv: Literal["never", "fa3_sm90", "fa3_sm90_or_sm100", "backend", "any"]
    v1_pooling: bool  # pooling models run on V1
    v1_spec_methods: tuple[str, ...]  # speculative methods V1 runs by default ("*": all)
    v1_mamba: Literal["v0_only", "opt_in", "default"]  # Mamba-style (recurrent state) layers
    v0_only_architectures: tuple[str, ...]  # registry classes that inherit SupportsV0Only
    # --- multimodal checkpoints
    skip_mm_profiling_flag: bool  # --skip-mm-profiling exists
    language_model_only_flag: bool  # --language-model-only exists
    zero_mm_limits_skip_tower: bool  # all-zero --limit-mm-per-prompt leaves the vision tower unbuilt
    # how many maximum-size items profile_run encodes (colo.vllm.process.mm_profile): MultiModalBudget's
    # encoder-budget rule, or one item (colo's earlier reading, kept where the budget code was not re-read)
    mm_profile_batch: Literal["one_item", "encoder_budget"]
    # an unset max_num_batched_tokens raised to one maximum-size item of a multimodal prefix-LM model
    # (colo.vllm.process.engine_limits): none; always (the model multimodal); with_mm_inputs (not when
    # --language-model-only or every modality's --limit-mm-per-prompt is 0)
    mm_prefix_batch_floor: Literal["none", "always", "with_mm_inputs"]
    error_names_device: bool
    uuid_in_cuda_visible_devices: bool  # CUDA_VISIBLE_DEVICES=GPU-<uuid> resolves (else an index is needed)
    # --- the model dtype, `--dtype` (ModelConfig's _get_and_verify_dtype; docs §15)
    dtype_names: tuple[str, ...]  # what --dtype accepts
    # where the checkpoint's dtype is looked up, in order; float32 when none states one
    dtype_config_keys: tuple[DtypeKey, ...]
    dtype_model_type: Literal["root", "text"]  # whose model_type the dtype rules read
    # what `auto` makes of a float32 checkpoint: float16; float16 except Gemma 2/3 (bfloat16); the platform's
    # preferred dtype (float16 for pooling models, else the first supported one that suits the model type)
    dtype_float32_auto: Literal["float16", "float16_gemma_bfloat16", "platform_preferred"]
    dtype_auto_bfloat16_model_types: tuple[str, ...]  # `auto` is bfloat16 whatever the config says
    # `auto` on a GPU that lacks the checkpoint's dtype: no fallback (the worker then refuses bfloat16 below
    # compute capability 8.0), the platform's first supported dtype, or its preferred one
    dtype_auto_fallback: Literal["none", "first_supported", "platform_preferred"]
    float16_refused_model_types: tuple[str, ...]  # _FLOAT16_NOT_SUPPORTED_MODELS: float16 is a ValueError
    # --- pipeline parallelism, `--pipeline-parallel-size` (docs §16)
    # v0: V1 falls back to V0 for any PP; ray_only: V1 only with the Ray executor (the default mp falls
    # back); v1: the multiprocessing executor runs PP on V1
    pp_engine: Literal["v0", "ray_only", "v1"]
    # KV cache groups: formed on each stage's own layers, or on the whole model's and projected on a stage
    pp_kv_groups: Literal["per_stage", "whole_model"]
    # "at least one request" check: each stage against its own pool, or the whole model's need against the
    # smallest stage pool
    pp_kv_check: Literal["per_stage", "whole_model_min_stage"]
    pp_kv_tensors_shrunk: bool  # stages above the minimum shrink their KV tensors to the common block count
    # which stages print "Available KV cache memory": none, each its own, or only the first (local rank 0)
    pp_available_kv_logged_by: Literal["none", "every_stage", "first_stage"]
    source: str

    @model_validator(mode="after")
    def _a_tier_for_every_gpu(self) -> VllmRules:
        last = self.batch_tiers[-1] if self.batch_tiers else None
        if last is None or last.min_gib != 0 or last.except_devices or last.devices:
            raise ValueError("batch_tiers must end with a tier for every GPU (min_gib 0, no device names)")
        return self

    @property
    def label(self) -> str:
        return f"vLLM {self.first}-{self.last}"

    def startup_error(self, *, free_gib: float, total_gib: float, util: float, requested_gib: float) -> str:
        device = " cuda:0" if self.error_names_device else ""
        return (
            f"ValueError: Free memory on device{device} ({free_gib:.2f}/{total_gib:.2f} GiB) on startup is less "
            f"than desired GPU memory utilization ({util}, {requested_gib:.2f} GiB). Decrease GPU memory "
            f"utilization or reduce GPU memory used by other processes."
        )

    def runs_v2_model_runner(
        self, *, architecture: str, generate: bool, moe: bool, hybrid: bool, quantized: bool
    ) -> bool:
        """`VllmConfig.use_v2_model_runner` by default (docs/vllm-memory-rules.md §3)."""
        if self.v2_runner_every_model:
            return True
        if not generate:
            return False
        listed = architecture in self.v2_runner_architectures
        if self.v2_runner_every_dense_text_model:
            return not hybrid and (listed or not moe)
        if self.v2_runner_listed_dense_unquantized_only:
            return listed and not (moe or quantized)
        return listed

    def batch_defaults(self, gpu_name: str, total_bytes: int) -> BatchTier:
        """The OpenAI server's max_num_batched_tokens / max_num_seqs defaults on this GPU."""
        return next(tier for tier in self.batch_tiers if tier.applies_to(gpu_name, total_bytes))


class SamplerBytesPerLogit(_Strict):
    """Peak bytes per logit (rows x vocabulary) of the dummy sampler run, by path; measured by replaying each
    path's tensor operations (bench/gpu/measure_sampler_peak.py)."""

    flashinfer_probs: int
    flashinfer_logits: int
    sort: int  # PyTorch's sort, 1 row or >= 128 rows
    sort_small_batch: int  # 2-127 rows: the sort's temporaries are relatively larger
    triton: int  # plus the cached per-program buffer, counted on its own
    v2_fp32_copy: int
    v2_in_place: int
    # the speculative (rejection-sampler) branch, by RejectionDummy variant
    spec_bf16_target_softmax: int
    spec_bf16_target_sorted: int
    spec_two_rows_bf16_clone: int
    spec_two_rows_fp32_clone: int
    spec_two_rows_triton: int


class TpCommunicationMib(_Strict):
    """Per-rank memory of tensor-parallel communication (MiB), as measured on two GPUs in vLLM's start-up
    order (bench/gpu/measure_tp_comm.py); the `_cumem_off` figures are for releases that turn NCCL's cuMem
    allocator off."""

    first_nccl_communicator: int
    first_nccl_communicator_cumem_off: int
    next_nccl_communicator: int
    next_nccl_communicator_cumem_off: int
    torch_nccl_group: int  # ProcessGroupNCCL's communicator, woken by the first all-gather
    torch_nccl_group_cumem_off: int
    custom_all_reduce_ipc: int  # the IPC buffers with an 8 MiB legacy buffer
    custom_all_reduce_ipc_extra_large_buffer: int  # what the 16 MiB legacy buffer adds
    custom_all_reduce_rank_data: int
    symm_mem_overhead: int  # beyond the symmetric-memory buffer's own size


class TpCommunicationByTopology(_Strict):
    """The same figures for GPUs that reach each other directly and for GPUs whose NCCL traffic goes through
    host memory (no peer-to-peer access)."""

    peer_to_peer: TpCommunicationMib
    host_staged: TpCommunicationMib


class CudagraphKernels(_Strict):
    """Kernel nodes one decode step of a decoder layer launches inside a captured graph, by what the layer holds
    (counts read in vLLM's source, not measurements; rules.yaml gives the reasoning per count)."""

    layer_norms: int  # the layer's two residual norms
    attention: int  # an attention mixer with its projections and its attention op
    attention_output_gate: int  # the sigmoid output gate of Qwen3-Next / Qwen3.5 attention
    gated_deltanet: int  # a Gated DeltaNet mixer with its projections and its core op
    dense_mlp: int
    moe_mlp: int  # router, routing, the fused experts
    shared_expert: int  # what a shared expert adds to a sparse MLP
    fp8_activation_quant: int  # per FP8 (W8A8) linear whose input no fusion pass quantizes


class MeasuredConstants(_Strict):
    """Version-independent figures no source file states; rules.yaml says where each was measured."""

    # The allowance for a PyTorch build no measurement covers, and the measured figures by PyTorch minor
    # release (colo.vllm.process.non_torch): the startup's library state after the snapshot, and the part of it
    # the first matmul makes (already in the baseline where the release creates the handles first)
    non_torch_growth_mib: int
    non_torch_growth_mib_cublas_in_baseline: int
    non_torch_startup_mib_by_torch: dict[str, int]
    cublas_first_use_mib_by_torch: dict[str, int]
    # CUDA graphs (colo.vllm.process.cudagraph): the driver's memory per instantiated graph (a PIECEWISE size
    # has one per layer piece) and per kernel node, the kernels of a decoder layer by its kind, the piece pool as a
    # multiple of the MLP's live activations, and the FA3 accumulator copies of the V2 runner's side-stream pool
    cudagraph_kib_per_graph_layer: int  # Hopper (compute capability 9)
    cudagraph_kib_per_graph_layer_other_gpus: int
    cudagraph_kib_per_kernel_node: int
    cudagraph_kernels: CudagraphKernels
    cudagraph_pool_mlp_factor: int
    cudagraph_v2_torch_stream_accumulators: int
    sampler_bytes_per_logit: SamplerBytesPerLogit
    tp_communication_mib: TpCommunicationByTopology
    post_profile_mib: int
    # What a V2-runner server grows by once it serves, beyond its budget (see rules.yaml for the measurement)
    v2_serving_growth_mib: int
    # Public log ids (bench/data/vllm_startup_logs.yaml) whose figures informed a constant above: the
    # accuracy benchmark reports them apart, never as evidence for the constant they informed.
    informed_by: tuple[str, ...]


class RulesCatalog(_Strict):
    releases: tuple[VllmRules, ...]  # oldest first
    constants: MeasuredConstants


@cache  # rules_for reads it for every lookup; a Version is immutable
def _version(text: str) -> Version:
    """A final release (post releases included); pre-, dev- and local builds have no mirrored rules."""
    try:
        version = Version(text)
    except InvalidVersion:
        version = None
    if version is None or version.is_prerelease or version.is_devrelease or version.local:
        raise ValueError(f"'{text}' is not a vLLM release number; write it like 0.11.0")
    return version


def newest_range_from(version: str, firsts: Sequence[str]) -> int:
    """Index of the range (given by its first release, oldest first) that `version` falls in; the oldest
    range for a version before all of them."""
    wanted = release_key(version)
    chosen = 0
    for index, first in enumerate(firsts):
        if release_key(first) <= wanted:
            chosen = index
    return chosen


def at_least(version: str, wanted: str) -> bool:
    """Whether a version (vLLM's, or a library a release pins, such as torch) is `wanted` or newer."""
    return Version(version) >= Version(wanted)


def same_release(planned: str, observed: str) -> bool:
    """A development build counts as the release it leads to (0.20.2rc1.dev129 -> 0.20.2)."""
    try:
        return Version(planned).base_version == Version(observed).base_version
    except InvalidVersion:
        return planned == observed


def _problems(error: ValidationError) -> list[str]:
    problems = []
    for detail in error.errors():
        key = ".".join(str(part) for part in detail["loc"]) or "<entry>"
        if detail["type"] == "extra_forbidden":
            problems.append(f"unknown key '{key}'")
        elif detail["type"] == "missing":
            problems.append(f"missing key '{key}'")
        else:
            problems.append(f"'{key}': {detail['msg']}")
    return problems


def _release(entry: Mapping[str, Any]) -> VllmRules:
    where = f"releases {entry.get('first', '?')}-{entry.get('last', '?')}"
    try:
        rules = VllmRules.model_validate(entry)
        first, last = _version(rules.first), _version(rules.last)
    except ValidationError as exc:
        raise VllmRulesFileError(f"{RULES_FILE}, {where}: {'; '.join(_problems(exc))}") from None
    except ValueError as exc:
        raise VllmRulesFileError(f"{RULES_FILE}, {where}: {exc}") from None
    if last < first:
        raise VllmRulesFileError(f"{RULES_FILE}, {where}: last is before first")
    return rules


def parse_rules(data: Mapping[str, Any]) -> RulesCatalog:
    """Validate rules.yaml's content (merge keys already resolved by the YAML loader)."""
    unknown = sorted(set(data) - set(RulesCatalog.model_fields))
    if unknown:
        raise VllmRulesFileError(f"{RULES_FILE}: unknown top-level key '{unknown[0]}'")
    releases = sorted(
        (_release(entry) for entry in data.get("releases") or ()), key=lambda r: _version(r.first)
    )
    if not releases:
        raise VllmRulesFileError(f"{RULES_FILE}: no releases")
    for earlier, later in pairwise(releases):
        if _version(later.first) <= _version(earlier.last):
            raise VllmRulesFileError(f"{RULES_FILE}: releases {later.label} overlap {earlier.label}")
    try:
        constants = MeasuredConstants.model_validate(data.get("constants"))
    except ValidationError as exc:
        raise VllmRulesFileError(f"{RULES_FILE}, constants: {'; '.join(_problems(exc))}") from None
    return RulesCatalog(releases=tuple(releases), constants=constants)


@cache
def _catalog() -> RulesCatalog:
    return parse_rules(parse_yaml(resources.files("colo.vllm").joinpath(RULES_FILE).read_text()))


def releases() -> tuple[VllmRules, ...]:
    """Every mirrored release range, oldest first."""
    return _catalog().releases


def supported_range() -> tuple[str, str]:
    ranges = releases()
    return ranges[0].first, ranges[-1].last


# How soon colo mirrors a new vLLM release (docs/keeping-up.md): a newer one is refused with this in its message.
SUPPORT_DAYS = 14


def rules_for(version: str) -> VllmRules:
    """Rules for one release; raises ValueError naming the supported range when colo does not mirror it.

    A release past a range's `last` but before the next range follows the earlier range (a patch release);
    past the newest range only patch releases of its minor are accepted. A newer release is refused with the
    newest mirrored one and the override a user may set at their own risk (colo.vllm.assumed_rules).
    """
    wanted = _version(version)
    chosen = None
    for entry in releases():
        if _version(entry.first) <= wanted:
            chosen = entry
    first, last = supported_range()
    if chosen is not None and wanted.release[:2] > _version(last).release[:2]:
        raise ValueError(
            f"vLLM {version} is newer than {last}, the newest release whose memory rules colo mirrors "
            f"({first} to {last}; colo adds a release within {SUPPORT_DAYS} days of its publication): pin "
            f"{last}, or keep {version} at your own risk with its plan sized by {last}'s rules: set "
            f'vllm.assumeRulesOf: "{last}" on the server (colo estimate: --assume-rules-of {last})'
        )
    if chosen is None:
        raise ValueError(
            f"vLLM {version} is older than {first}, the oldest release whose memory rules colo mirrors "
            f"({first} to {last}); pin a version in that range"
        )
    return chosen


def first_release_where(holds: Callable[[VllmRules], bool]) -> str:
    """The oldest mirrored release for which `holds` is true, for messages such as "added in 0.11.0"."""
    return next(entry.first for entry in releases() if holds(entry))


def release_windows(holds: Callable[[VllmRules], bool]) -> list[tuple[str, str]]:
    """The runs of consecutive mirrored releases for which `holds` is true, as (first, last) pairs."""
    windows: list[tuple[str, str]] = []
    previous = False
    for entry in releases():
        now = holds(entry)
        if now and previous:
            windows[-1] = (windows[-1][0], entry.last)
        elif now:
            windows.append((entry.first, entry.last))
        previous = now
    return windows


def kv_cache_memory_bytes_missing(rules: VllmRules, version: str) -> str | None:
    """Why `--kv-cache-memory-bytes` cannot be used with this release, or None when it exists."""
    if rules.has_kv_cache_memory_bytes:
        return None
    added = first_release_where(lambda r: r.has_kv_cache_memory_bytes)
    return f"vLLM {version} has no --kv-cache-memory-bytes (added in {added})"


def dtype_names(version: str) -> tuple[str, ...] | None:
    """The names `--dtype` takes in vLLM `version`; None for a release colo does not mirror."""
    try:
        return rules_for(version).dtype_names
    except ValueError:
        return None


def measured_constants() -> MeasuredConstants:
    """Version-independent figures with their sources (non-torch growth, graph cost, sampler factors)."""
    return _catalog().constants


PP_SUPPORT_FILE = "pp_support.yaml"


class PpPlacement(_Strict):
    """Which pipeline stages a model class builds its embedding, final norm and lm_head on."""

    embedding: Literal["first_or_tied_last", "every"]
    norm: Literal["last", "every"]
    lm_head: Literal["last", "every"]
    source: str


class _PpSupport(_Strict):
    source: str
    placement: dict[str, PpPlacement]
    unsupported: dict[str, tuple[tuple[str, str], ...]]  # architecture -> (first, last) releases


@cache
def _pp_support() -> _PpSupport:
    text = resources.files("colo.vllm").joinpath(PP_SUPPORT_FILE).read_text()
    return _PpSupport.model_validate(parse_yaml(text))


def supports_pipeline_parallel(architecture: str, version: str) -> bool:
    """Whether vLLM `version`'s class for `architecture` implements SupportsPP (pp_support.yaml)."""
    wanted = release_key(version)
    ranges = _pp_support().unsupported.get(architecture, ())
    return not any(release_key(first) <= wanted <= release_key(last) for first, last in ranges)


def pp_placement(architecture: str) -> PpPlacement | None:
    """Where vLLM's class for `architecture` puts its embedding, norm and lm_head across stages (None: colo has
    not read it)."""
    return _pp_support().placement.get(architecture)


def pp_placed_architectures() -> tuple[str, ...]:
    return tuple(sorted(_pp_support().placement))
