"""CUDA-graph capture sizes, and the graph memory vLLM captures (`capture_model`) and estimates beforehand
(`profile_cudagraph_memory`).

Sizes follow `VllmConfig._set_cudagraph_sizes` for the release's rule. Which graphs exist, and what holds their
memory, is read in vLLM's and PyTorch's sources (docs/vllm-memory-rules.md §5a):

* Modes. PIECEWISE graphs for every capture size; FULL decode graphs for the sizes up to
  `max_num_seqs * (1 + speculative tokens)` when the release's default mode is FULL_AND_PIECEWISE, except for
  pooling models, which vLLM keeps PIECEWISE ("Pooling models do not support full cudagraphs").
* Executables. A PIECEWISE size is one CUDA graph per piece: the compiled model is split at every attention
  (or mixer) op, so layers + 1 graphs. A FULL size is one graph. The driver keeps memory per instantiated
  graph and per kernel node, outside PyTorch's allocator, and keeps it after the graphs are destroyed. The
  kernel nodes are counted per layer by its kind (`layer_kernels`: attention or Gated DeltaNet mixer, dense or
  sparse MLP, FP8 activation quantizations), counts read in vLLM's source (rules.yaml `cudagraph_kernels`).
* The pool. All graphs share one private pool, captured largest first, so the pool is sized by the largest
  capture: a piece's activations (PyTorch's allocator rounds them into 2 MiB and 20 MiB segments), plus, for
  FULL graphs on Hopper, FlashAttention 3's split-KV accumulators, too large for any block the piecewise
  graphs freed.
* The stream. `graph_capture` opens a new CUDA stream, and the first matmul on it allocates a cuBLAS
  workspace (PyTorch keeps one per handle and stream).
* A model without a KV cache (encoder-only) skips the memory profile, so its capture runs its first forward
  and, on an empty compile cache, torch.compile itself, between the two `mem_get_info` reads vLLM's "took" is
  the difference of (`vllm 0.22.0 v1/worker/gpu_model_runner.py::capture_model`). What they leave in PyTorch's
  cache is released right after: the warm start's warm-up is the pool term's; the cold start's compiler scratch
  no source sizes, and the figures here are the warm start's (docs/vllm-memory-rules.md §5a).
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.quant_methods import QuantRelease, quant_release
from colo.vllm.checkpoint.quantization import WeightFormat
from colo.vllm.process.quant_bytes import fp8_marlin
from colo.vllm.rules import CudagraphKernels, MeasuredConstants, VllmRules

KIB = 1024
MIB = 1024 * KIB
SMALL_CAPTURE_SIZES = (1, 2, 4, 8)  # the field report's attempt: four sizes instead of 51

# PyTorch c10/cuda/CUDACachingAllocator.cpp: allocations up to kSmallSize share 2 MiB segments
# (kSmallBuffer); those below kMinLargeAlloc share 20 MiB segments (kLargeBuffer); larger ones get a segment
# of their own, rounded up to kRoundLarge.
SMALL_ALLOC = 1 * MIB
SMALL_SEGMENT = 2 * MIB
LARGE_SEGMENT = 20 * MIB
MIN_LARGE_ALLOC = 10 * MIB
ROUND_LARGE = 2 * MIB
# PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp::parseChosenWorkspaceSize: ":4096:8" (32 MiB) from compute
# capability 9 (Hopper; newer PyTorch also 10 and 12), ":4096:2:16:8" below. Measured 32 MiB on an H200
# (bench/gpu/results/2026-12-02-h200-graph-memory.json, `cublas_new_stream_eager_free_drop`).
CUBLAS_WORKSPACE_SM90 = 4096 * 8 * KIB
CUBLAS_WORKSPACE_OLDER = 4096 * 2 * KIB + 16 * 8 * KIB
FA3_ACCUMULATOR_BYTES = 4  # fp32 partial outputs, one per split
ESTIMATE_MIN_PER_GRAPH = 1 * MIB  # profile_cudagraph_memory: "at least 1 MiB per graph for driver overhead"
PROFILE_SAMPLES = 2  # profile_cudagraph_memory captures the first two sizes of each mode


def default_capture_sizes(
    rules: VllmRules, *, max_num_seqs: int, max_num_batched_tokens: int, num_speculative_tokens: int = 0
) -> list[int]:
    """`VllmConfig._set_cudagraph_sizes` (0.12+) / `SchedulerConfig.cuda_graph_sizes` (<= 0.11).

    Up to 0.9.2 the list is fixed, [1, 2, 4] + every multiple of 8 to 512, whatever max_num_seqs is
    (`vllm 0.8.0 config.py::VllmConfig._set_cudagraph_sizes`; 0.9.x `cuda_graph_sizes` defaults to [512])."""
    if rules.capture_rule == "fixed512":
        return [s for s in (1, 2, 4, *range(8, 513, 8)) if s <= max_num_batched_tokens]
    query_len = 1 + num_speculative_tokens
    top = 2 * max_num_seqs * (query_len if rules.capture_spec_multiplier else 1)
    top = min(top, 512)
    if rules.capture_rule == "step8":
        sizes = [1, 2, 4, *range(8, top + 1, 8)]
    else:
        top = min(top, max_num_batched_tokens)
        sizes = [s for s in (1, 2, 4) if s <= top]
        sizes += [*range(8, min(top + 1, 256), 8), *range(256, top + 1, 16)]
    if rules.capture_append_max_num_batched_tokens and max_num_batched_tokens <= top:
        sizes.append(max_num_batched_tokens)
    if rules.capture_append_max_num_seqs and max_num_seqs <= top:
        sizes.append(max_num_seqs)
    return sorted({s for s in sizes if s <= max_num_batched_tokens})


@dataclass(frozen=True)
class GraphPlan:
    piecewise: int  # capture sizes with PIECEWISE graphs
    full: int  # capture sizes with a FULL graph
    largest: int
    bytes: int  # what capture_model takes ("Graph capturing finished in S secs, took X GiB")
    estimate_bytes: int = 0  # what profile_cudagraph_memory returns ("Estimated CUDA graph memory")
    executables: int = 0  # CUDA graphs instantiated: layers + 1 per PIECEWISE size, one per FULL size
    retained_bytes: int = (
        0  # what the profile left held: its stream's cuBLAS workspace, its graphs' driver memory
    )
    # of retained_bytes, the driver memory of the graphs the profile captured (and destroyed): non-torch
    # growth where the release profiles inside memory_profiling's window (colo.vllm.process.non_torch)
    profile_executable_bytes: int = 0

    @property
    def resident_bytes(self) -> int:
        """Everything the graphs hold once the process serves (nvidia-smi sees it)."""
        return self.bytes + self.retained_bytes

    @property
    def count(self) -> int:
        return self.piecewise + self.full


@dataclass(frozen=True)
class GraphSetting:
    """What decides one process's graphs besides the model and its capture sizes."""

    max_num_seqs: int
    decode_query_len: int = 1
    pooling: bool = False
    compute_capability: tuple[int, int] = (0, 0)
    tensor_parallel_size: int = 1
    v2_runner: bool = False
    profiled: bool = False  # profile_cudagraph_memory captured samples before the real capture
    vllm_version: str | None = None  # whose quantization rules pick the FP8 kernels (None: the newest known)
    flashinfer: bool = True  # the image carries FlashInfer (its block-FP8 GEMM on Hopper); official images do


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _mlp_live(arch: ModelArchitecture, tokens: int, tp: int) -> tuple[int, int]:
    """The largest tensor and the live activations of one MLP at `tokens` tokens (bytes)."""
    element = arch.dtype_bytes
    if arch.moe is None:
        largest = tokens * 2 * arch.intermediate_size // tp * element  # gate_up output
        live = tokens * 3 * arch.intermediate_size // tp * element  # + the activated half
        return largest, live
    m = arch.moe
    routed = tokens * m.experts_per_token
    largest = routed * 2 * m.moe_intermediate_size // tp * element  # fused_moe's first cache
    live = routed * (3 * m.moe_intermediate_size // tp + arch.hidden_size) * element
    return largest, live


def _gdn_live(arch: ModelArchitecture, tokens: int, tp: int) -> tuple[int, int, int]:
    """What a Gated DeltaNet layer leaves live in the pieces around its core op, the piecewise split
    (`vllm::qwen_gdn_attention_core` in `config/compilation.py::_attention_ops`), read in vLLM 0.22.0's
    `model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py::forward_cuda`: (in_proj_qkvz's output, the
    input projection's live tensors at the split, what the next piece carries through its MLP), bytes.

    The piece ending at the core op holds the layer's input projections: in_proj_qkvz's output [T, (2 key_dim
    + 2 value_dim) / tp], in_proj_ba's [T, 2 value heads / tp] and its b and a made contiguous, and
    core_attn_out = torch.zeros([T, value_dim / tp]), all inputs of the core op or of the next piece. Qwen3.5/3.6
    (`gqa_interleaved_layout=False`, models/qwen3_5.py) split mixed_qkv and z off in_proj_qkvz's output as views;
    Qwen3-Next (`True`, models/qwen3_next.py) reorders them (`fix_query_key_value_ordering`: value and z
    reshaped across the head groups, copies) and concatenates q, k, v into a new mixed_qkv [T, (2 key_dim +
    value_dim) / tp].

    z crosses the split: `_output_projection` gates RMSNormGated with it in the next piece, whose caller holds it
    until that piece returns, so through its MLP. Qwen3.5/3.6's z is a view and keeps all of in_proj_qkvz's
    output alive; Qwen3-Next's is a copy [T, value_dim / tp]. A dense layer carries no such tensor past its
    attention op (q, k, v die with it; its output buffer and the residual, which every piece carries, are what
    the measured factor absorbed)."""
    g = arch.gdn
    if g is None:
        return 0, 0, 0
    element = arch.dtype_bytes
    key_dim = g.num_key_heads * g.key_head_dim
    value_dim = g.num_value_heads * g.value_head_dim
    qkvz = tokens * (2 * key_dim + 2 * value_dim) // tp * element
    ba = tokens * 2 * g.num_value_heads // tp * element  # in_proj_ba's output, then b and a as copies
    core_out = tokens * value_dim // tp * element
    projection = qkvz + 2 * ba + core_out
    if arch.architecture.startswith("Qwen3Next"):
        z = tokens * value_dim // tp * element
        projection += tokens * (2 * key_dim + value_dim) // tp * element + z  # mixed_qkv's concatenation, z
        return qkvz, projection, z
    return qkvz, projection, qkvz


def piece_pool_bytes(arch: ModelArchitecture, tokens: int, tensor_parallel_size: int, factor: int) -> int:
    """The pool a piece of the largest size leaves: `factor` times the live activations of the largest piece
    (the factor measured on a synthetic decoder over its MLP's, bench/gpu/measure_graph_memory.py), in PyTorch's
    segments, with one small segment.

    A piece runs from one split op's output to the next: o_proj (or out_proj), the norms, the MLP, the next
    layer's input projections. Its peak is the MLP's (gate_up output and the activated half; fused_moe's caches)
    or, with Gated DeltaNet layers (`_gdn_live`), the larger of the MLP's plus what the piece after a GDN core op
    carries through it (z's storage) and the input projection's tensors at the split. Only the shapes come from
    source; the factor is the dense decoder's (docs/vllm-memory-rules.md §5a)."""
    tp = tensor_parallel_size
    largest, live = _mlp_live(arch, tokens, tp)
    if arch.linear_attention_layers and arch.gdn is not None:
        qkvz, projection, carried = _gdn_live(arch, tokens, tp)
        largest = max(largest, qkvz)
        live = max(live + carried, projection)
    pool = _round_up(factor * live, ROUND_LARGE)
    if SMALL_ALLOC < largest < MIN_LARGE_ALLOC:  # served from a 20 MiB segment whatever its size
        pool = max(pool, LARGE_SEGMENT)
    return pool + SMALL_SEGMENT


def fa3_accumulator_bytes(
    arch: ModelArchitecture, rules: VllmRules, tokens: int, setting: GraphSetting
) -> int:
    """FlashAttention 3's split-KV outputs in a FULL graph of `tokens` decode requests: [splits, tokens, heads,
    head dim] fp32 (`vllm 0.22.0 v1/attention/backends/flash_attn.py`: "intermediate buffers of size
    [num_splits, num_heads, num_tokens, head_size] are allocated"). FA3 runs on compute capability 9 only;
    other backends (FA2, FlashInfer, Triton, MLA kernels) hold no such buffer in the pool."""
    if setting.compute_capability[0] != 9 or arch.mla is not None or not arch.num_attention_heads:
        return 0
    heads = max(arch.num_attention_heads // setting.tensor_parallel_size, 1)
    head_dim = max(arch.head_dim, arch.global_head_dim or 0)
    raw = rules.fa3_cudagraph_splits * tokens * heads * head_dim * FA3_ACCUMULATOR_BYTES
    return _round_up(raw, ROUND_LARGE)


def cublas_workspace_bytes(compute_capability: tuple[int, int]) -> int:
    return CUBLAS_WORKSPACE_SM90 if compute_capability[0] >= 9 else CUBLAS_WORKSPACE_OLDER


def kib_per_graph_field(compute_capability: tuple[int, int]) -> str:
    """The measured constant that holds the driver's memory per graph on this GPU (Hopper's is measured here)."""
    if compute_capability[0] == 9:
        return "cudagraph_kib_per_graph_layer"
    return "cudagraph_kib_per_graph_layer_other_gpus"


def _fp8_block_flashinfer(
    weights: WeightFormat, release: QuantRelease, capability: int, flashinfer: bool
) -> bool:
    """Block-wise FP8 linear layers run FlashInfer's block-scale GEMM on their bf16 input: on compute capability 9.0
    exactly, from the release whose VLLM_BLOCKSCALE_FP8_GEMM_FLASHINFER defaults to 1, where the image carries
    FlashInfer (quant_methods.yaml fp8_block_flashinfer). Linear layers whose N is not a multiple of 64 or K of
    128 fall back to the next kernel; colo does not tell them apart."""
    return weights.strategy == "block" and release.fp8_block_flashinfer and capability == 90 and flashinfer


def _fp8_linear_quants(
    arch: ModelArchitecture, weights: WeightFormat, flashinfer_gemm: bool, layers: tuple[int, int, int, int]
) -> int:
    """Input quantizations of the FP8 linear layers no fusion pass absorbs, over the (attention, Gated DeltaNet,
    dense MLP, shared expert) layers.

    A shared expert (Qwen2MoeMLP: gate_up and down, quantized like any linear) runs inside the opaque
    `vllm::moe_forward_shared` op (vllm 0.22.0 and 0.34.0 fused_moe/runner/moe_runner.py::MoERunner._forward_impl),
    so neither the norm nor the SiLU-and-mul fusion reaches its quantizations: two per layer. On FlashInfer's
    block-scale GEMM (`_fp8_block_flashinfer`) no QuantFP8 op is left in the graph and each linear quantizes its
    own input inside the op: two per mixer, two per MLP."""
    attention, linear, dense, shared = layers
    quants = 2 * shared
    if flashinfer_gemm:
        return quants + 2 * (attention + linear + dense)
    unfused_after_norm = 0 if _standard_norm(arch) else 1  # qkv / qkvz, and gate_up
    quants += attention * (1 + unfused_after_norm)  # o_proj, qkv
    quants += linear * (1 + unfused_after_norm)  # out_proj after RMSNormGated, in_proj_qkvz
    down_proj = 0 if weights.strategy == "block" else 1  # SiLU-and-mul absorbs a block quantization
    return quants + dense * (unfused_after_norm + down_proj)  # gate_up, down_proj


def _fp8_activation_quants(
    arch: ModelArchitecture,
    release: QuantRelease,
    capability: int,
    layers: tuple[int, int, int, int, int],
    *,
    flashinfer: bool = True,
) -> int:
    """Activation quantizations no fusion pass absorbs, per decode step, over the (attention, Gated DeltaNet,
    dense MLP, sparse MLP, shared expert) layers: none for a linear or expert stack vLLM runs weight-only through
    Marlin (`quant_bytes.fp8_marlin`, the rule the weight layout reads; apply_fp8_marlin_linear takes bf16 input).
    `flashinfer`: the image carries FlashInfer."""
    weights = arch.quant_scheme.primary
    if weights is None or weights.kind != "fp8" or weights.weight_only:
        return 0
    attention, linear, dense, sparse, shared = layers
    quants = 0
    if not fp8_marlin(weights, release, capability):
        flashinfer_gemm = _fp8_block_flashinfer(weights, release, capability, flashinfer)
        quants += _fp8_linear_quants(arch, weights, flashinfer_gemm, (attention, linear, dense, shared))
    if not fp8_marlin(weights, release, capability, experts=True):
        quants += sparse * (
            1 + (0 if weights.strategy == "block" else 1)
        )  # the experts' input, their activation
    return quants


def _standard_norm(arch: ModelArchitecture) -> bool:
    """The layer norms are vLLM's RMSNorm, which the norm+quant fusion pass matches; Qwen3-Next/3.5 and Gemma
    use GemmaRMSNorm (an fp32 `1 + weight`), which it does not."""
    gemma_style = arch.is_hybrid_linear or arch.attn_output_gate or arch.model_type.startswith("gemma")
    return not gemma_style


def layer_kernels(
    arch: ModelArchitecture,
    k: CudagraphKernels,
    compute_capability: tuple[int, int],
    release: QuantRelease,
    *,
    flashinfer: bool = True,
) -> int:
    """Kernel nodes the decoder layers launch in one captured decode step, summed by layer kind: mixer (attention,
    Gated DeltaNet), MLP (dense, sparse with or without a shared expert) and the FP8 activation quantizations no
    fusion pass absorbs (rules.yaml `cudagraph_kernels` gives each count's source), on the GPU and vLLM release
    (its quantization rules) given; `flashinfer`: the image carries FlashInfer (its block-FP8 GEMM on Hopper)."""
    layers = arch.num_layers
    linear = min(arch.linear_attention_layers, layers)
    attention = layers - linear
    sparse = 0
    if arch.moe is not None:
        sparse = min(arch.moe.moe_layers or layers, layers)
    dense = layers - sparse
    shared = sparse if arch.moe is not None and arch.moe.shared_expert_intermediate_size else 0
    gate = k.attention_output_gate if arch.attn_output_gate else 0
    kernels = layers * k.layer_norms + attention * (k.attention + gate) + linear * k.gated_deltanet
    kernels += dense * k.dense_mlp + sparse * k.moe_mlp + shared * k.shared_expert
    major, minor = compute_capability
    kinds = (attention, linear, dense, sparse, shared)
    quants = _fp8_activation_quants(arch, release, major * 10 + minor, kinds, flashinfer=flashinfer)
    return kernels + quants * k.fp8_activation_quant


def _executable_bytes(
    consts: MeasuredConstants, compute_capability: tuple[int, int], graphs: int, kernels: int
) -> int:
    """Driver memory of `graphs` instantiated CUDA graphs holding `kernels` kernel nodes in all."""
    per_graph = int(getattr(consts, kib_per_graph_field(compute_capability))) * KIB
    per_node = consts.cudagraph_kib_per_kernel_node * KIB
    return graphs * per_graph + kernels * per_node


@dataclass(frozen=True)
class _Parts:
    """One process's graph memory by what holds it (bytes)."""

    piecewise: int  # sizes
    full: int
    per_piecewise: int  # driver memory of one PIECEWISE size's layers + 1 graphs
    per_full: int
    workspace: int  # the capture stream's cuBLAS workspace
    pool: int  # the largest piece's activations
    accumulators: int  # FA3's split-KV outputs of the largest FULL graph
    full_pool: int  # what FULL graphs need beside the piecewise pool


def full_graph_sizes(rules: VllmRules, sizes: list[int], setting: GraphSetting) -> list[int]:
    """The uniform-decode sizes captured as FULL graphs: none for a pooling model or a PIECEWISE release."""
    pooled_out = setting.pooling and not rules.full_cudagraphs_for_pooling
    if rules.cudagraph_mode != "FULL_AND_PIECEWISE" or pooled_out:
        return []
    q = setting.decode_query_len
    return [s for s in sizes if q <= s <= setting.max_num_seqs * q]


def _parts(
    arch: ModelArchitecture,
    rules: VllmRules,
    sizes: list[int],
    setting: GraphSetting,
    consts: MeasuredConstants,
) -> _Parts:
    full_sizes = full_graph_sizes(rules, sizes, setting)
    cc, layers = setting.compute_capability, arch.num_layers
    release = quant_release(setting.vllm_version)
    kernels = layer_kernels(arch, consts.cudagraph_kernels, cc, release, flashinfer=setting.flashinfer)
    workspace = cublas_workspace_bytes(cc)
    pool = piece_pool_bytes(arch, max(sizes), setting.tensor_parallel_size, consts.cudagraph_pool_mlp_factor)
    accumulators = fa3_accumulator_bytes(arch, rules, max(full_sizes), setting) if full_sizes else 0
    full_pool = accumulators  # FULL graphs reuse the piecewise pool's blocks, but not for the accumulators
    if setting.v2_runner and rules.v2_full_graphs_on_torch_stream and full_sizes:
        # torch.cuda.graph without a stream captures on PyTorch's own side stream, whose blocks the piecewise
        # graphs' (on vLLM's stream) cannot serve: a second workspace and activation pool.
        full_pool = workspace + pool + consts.cudagraph_v2_torch_stream_accumulators * accumulators
    return _Parts(
        len(sizes),
        len(full_sizes),
        _executable_bytes(consts, cc, layers + 1, kernels),
        _executable_bytes(consts, cc, 1, kernels),
        workspace,
        pool,
        accumulators,
        full_pool,
    )


def _estimate(p: _Parts, v2_runner: bool) -> tuple[int, int, int]:
    """profile_cudagraph_memory's figure, and the PIECEWISE and FULL sizes whose graphs it captured."""
    spread_full = max(p.full - 1, 0) * max(p.per_full, ESTIMATE_MIN_PER_GRAPH)
    if v2_runner:
        # 0.29+ (V2): the profile runs the real capture_model, every PIECEWISE size and two FULL samples,
        # extrapolated as first + (n - 1) x second
        estimate = p.workspace + p.pool + p.full_pool + p.piecewise * p.per_piecewise + spread_full
        return estimate + (p.per_full if p.full else 0), p.piecewise, min(p.full, PROFILE_SAMPLES)
    # V1 (0.18+): the first capture of each mode, then the second one's growth for every further graph; the
    # modes' first captures are taken to overlap in one pool, so only the larger counts
    first_full = p.accumulators + p.per_full if p.full else 0
    estimate = max(p.workspace + p.pool + p.per_piecewise, first_full)
    estimate += (p.piecewise - 1) * max(p.per_piecewise, ESTIMATE_MIN_PER_GRAPH) + spread_full
    return estimate, min(p.piecewise, PROFILE_SAMPLES), min(p.full, PROFILE_SAMPLES)


def graph_memory(
    arch: ModelArchitecture,
    rules: VllmRules,
    sizes: list[int],
    setting: GraphSetting,
    consts: MeasuredConstants,
) -> GraphPlan:
    """The graphs one process captures, what capturing them takes and what vLLM's profile estimates."""
    if not sizes:
        return GraphPlan(0, 0, 0, 0)
    p = _parts(arch, rules, sizes, setting, consts)
    estimate, sampled_pw, sampled_full = _estimate(p, setting.v2_runner)
    if not setting.profiled:
        sampled_pw = sampled_full = 0
    # capture_model: a new stream's workspace, the pool, the FULL graphs' own segment, and the executables the
    # driver cannot give back from the profile's destroyed graphs
    captured = p.workspace + p.pool + p.full_pool
    captured += (p.piecewise - sampled_pw) * p.per_piecewise + (p.full - sampled_full) * p.per_full
    # the profile's stream keeps its workspace, and the driver keeps its destroyed graphs' memory
    sampled = sampled_pw * p.per_piecewise + sampled_full * p.per_full
    retained = p.workspace + sampled if setting.profiled else 0
    executables = p.piecewise * (arch.num_layers + 1) + p.full
    return GraphPlan(p.piecewise, p.full, max(sizes), captured, estimate, executables, retained, sampled)
