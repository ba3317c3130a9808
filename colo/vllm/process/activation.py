"""The activation peak vLLM's `profile_run` measures (`torch_peak_increase`), per tensor-parallel rank.

The profile runs one dummy forward pass of `max_num_batched_tokens` tokens, then one sampler (or pooler)
pass for `min(max_num_seqs, tokens)` rows. The forward and the sampler are separate peaks; what spans both
(the Triton top-k/top-p buffer, which stays cached) is added to whichever is larger. Attention kernels' own
workspaces are not in the figure (vLLM skips attention metadata while profiling).

Two allocations outlive the pass they are made in:

* The cuBLAS workspace. PyTorch allocates it through its caching allocator at a handle's first matmul on a
  stream, and keeps it (`aten/src/ATen/cuda/CublasHandlePool.cpp::setWorkspaceForHandle`, `getNewWorkspace`:
  32 MiB on compute capability 9, 8 MiB + 128 KiB below). Up to 0.32 nothing runs a matmul before the profile,
  so its first matmul allocates the workspace inside the measured peak; from 0.33 `Worker.init_device` runs
  `torch.mm` before the startup snapshot and the workspace is baseline (`vllm 0.33.0 v1/worker/gpu_worker.py`).
* A compiled model's attention output. torch.compile splits the model at each attention (or linear-attention
  mixer) op; the output buffer the attention op writes is an input of the next piece (o_proj, the MLP, the
  next layer's projections), and the code that stitches the pieces deletes a piece's inputs only after the
  piece returns (`vllm 0.22.0 .. 0.34.0 compilation/codegen.py::generate_execution_code_with_name`, `del_after`
  the last consumer; FX's generated code did the same before). So the output, [tokens, heads x head dim], is
  alive through the whole MLP. Inside a piece Inductor lowers the rotary embedding and q/k norms natively
  (custom ops are off under Inductor): they write new q and k buffers while the fused qkv output, whose v is a
  view, stays alive. In eager mode the output dies with the attention module's frame and rotary runs in place,
  but Python frames hold what Inductor would free: a dense MLP's gate_up output is a local of
  `MLP.forward` while the down projection writes its result, and the normed input a local of the decoder
  layer's forward (`vllm 0.22.0 model_executor/models/qwen3.py`, `llama.py`), so one more hidden-sized tensor
  is alive than compiled code keeps beside the gate_up output.

Tensor parallelism shards only what vLLM shards: the MLP's intermediate, the query heads and the KV heads.
The residual stream is whole on every rank, and so are the logits: `LogitsProcessor._gather_logits`
all-gathers them and every rank runs the full-vocabulary sampler (`vllm 0.8.0 .. 0.33.0
model_executor/layers/logits_processor.py`, `Platform.use_all_gather` is true under V1).

Pooling models skip the sampler. `_dummy_pooler_run` runs each pooling task the model supports on the whole
batch's hidden states (`vllm 0.22.0 v1/worker/gpu_model_runner.py::_dummy_pooler_run_task`; 0.34
`v1/worker/gpu/pool/pooling_runner.py::dummy_pooler_run`); an embedding model supports `token_embed`
(`model_executor/layers/pooler/special.py::DispatchPooler.for_embedding`), whose output is every token's
hidden state in the pooler's head dtype (float32) beside the hidden states it came from. That pass stays far
below the forward's peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.process.cudagraph import cublas_workspace_bytes
from colo.vllm.process.kv_cache import kv_heads_per_rank
from colo.vllm.process.pipeline import Stage
from colo.vllm.rules import SamplerBytesPerLogit, VllmRules

TRITON_MIN_ROWS = 8  # apply_top_k_top_p takes the Triton kernel from 8 rows (0.17-0.29)
SORT_FULL_ROWS = 128  # below this (and above 1 row) PyTorch's sort holds relatively more


@dataclass(frozen=True)
class SamplerProfile:
    """How one release's dummy sampler run peaks, in bytes per logit, and the rows of its cached buffer."""

    bytes_per_logit: int  # the larger of the plain run and the speculative branch
    buffer_rows: int  # rows of the persistent Triton top-k/top-p buffer (0: none)
    hidden_states_held: bool  # the whole [tokens, hidden] output stays alive through the sampler


def _sort_bytes(table: SamplerBytesPerLogit, rows: int) -> int:
    return table.sort if rows == 1 or rows >= SORT_FULL_ROWS else table.sort_small_batch


def _v1_plain_bytes(
    rules: VllmRules, table: SamplerBytesPerLogit, rows: int, flashinfer: bool
) -> tuple[int, bool]:
    """(bytes per logit, whether the Triton buffer is made) of the V1 runner's plain dummy sampler run."""
    path = rules.sampler_path
    if not flashinfer and path in ("flashinfer_probs", "flashinfer_logits"):
        path = "sort"  # "FlashInfer is not available. Falling back to the PyTorch-native implementation"
    if not flashinfer and path == "flashinfer_then_native":
        path = "triton"  # only the native call runs: Triton from 8 rows, PyTorch's sort below
    triton_rows = path == "triton_all_rows" or rows >= TRITON_MIN_ROWS
    if path == "flashinfer_probs":
        return table.flashinfer_probs, False
    if path == "flashinfer_logits":
        return table.flashinfer_logits, False
    if path == "sort" or (path == "triton" and not triton_rows):
        return _sort_bytes(table, rows), False
    if path == "flashinfer_then_native" and not triton_rows:  # the second, native call sorts
        return max(table.flashinfer_logits, _sort_bytes(table, rows)), False
    return max(table.triton, table.flashinfer_logits), True


def sampler_profile(
    rules: VllmRules,
    table: SamplerBytesPerLogit,
    *,
    rows: int,
    v2_runner: bool,
    speculative: bool,
    sm_count: int,
    flashinfer_installed: bool = True,
    model_dtype_bytes: int = 2,
) -> SamplerProfile:
    """`_dummy_sampler_run` of the release and runner (docs/vllm-memory-rules.md §11). The official images
    carry FlashInfer; a plain `pip install vllm` before 0.14 does not, and sorts instead.

    The table was replayed with 16-bit logits: the lm_head's output in the model dtype, then the sampler's
    float32 copy (`logits.to(torch.float32)`, v1/sample/sampler.py::Sampler.forward). A float32 model's logits
    are already float32, so that copy is the same tensor: two bytes a logit fewer; the V2 runner's in-place
    sampler holds its 4-byte logits instead of 2 (§15). The speculative branches keep their replayed figures."""
    held = rules.hidden_states_held_through_sampler
    wide = model_dtype_bytes == 4
    if v2_runner:  # greedy dummy batch; no speculative branch
        v2 = {
            "fp32_copy": table.v2_fp32_copy - (2 if wide else 0),
            "in_place": table.v2_in_place + (2 if wide else 0),
            "warmup_flashinfer": table.flashinfer_logits - (2 if wide else 0),
        }[rules.v2_dummy_sampler]
        return SamplerProfile(v2, 0, held)
    plain, triton_buffer = _v1_plain_bytes(rules, table, rows, flashinfer_installed)
    plain -= 2 if wide else 0
    spec = 0
    if speculative and rules.rejection_sampler_dummy != "none":
        spec = int(getattr(table, f"spec_{rules.rejection_sampler_dummy}"))
        triton_buffer = triton_buffer or rules.rejection_sampler_dummy == "two_rows_triton"
    buffer_rows = 0
    if triton_buffer:  # apply_top_k_top_p_triton: min(next_pow2(min(SMs, rows)), SMs) rows, cached
        programs = min(sm_count, rows)
        buffer_rows = min(1 << (programs - 1).bit_length(), sm_count)
    return SamplerProfile(max(plain, spec), buffer_rows, held)


# The Qwen-VL image processors allow at most 16384 merged tokens per image by default (max_pixels =
# 16384 x (patch x merge)^2); vLLM profiles the encoder with an image of that size
# (`get_image_size_with_most_features`). The figure is the Hugging Face processor's default, not vLLM code; a
# checkpoint's preprocessor_config.json max_pixels replaces it.
QWEN_VL_MAX_IMAGE_TOKENS = 16384


def encoder_profile_kept_bytes(arch: ModelArchitecture) -> int:
    """Pixels and encoder outputs of the profiling pass's one maximum-size image, which `profile_run` keeps
    alive through the text forward and the sampler (`vllm 0.20.0 v1/worker/gpu_model_runner.py::profile_run`:
    `batched_dummy_mm_inputs`, `self.encoder_cache`). Towers without spatial merging (Gemma) keep a few MiB."""
    vision = arch.vision
    if vision is None or vision.spatial_merge_size <= 1:
        return 0
    merged_patch = vision.patch_size * vision.spatial_merge_size
    tokens = QWEN_VL_MAX_IMAGE_TOKENS if vision.max_pixels is None else vision.max_pixels // merged_patch**2
    patches = tokens * vision.spatial_merge_size**2
    patch_values = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
    pixels = patches * patch_values * arch.dtype_bytes
    outputs = tokens * vision.out_hidden_size * arch.dtype_bytes * (1 + vision.deepstack_layers)
    return pixels + outputs


@dataclass(frozen=True)
class ActivationPeak:
    forward_bytes: int
    sampler_bytes: int
    persistent_bytes: int = 0  # allocated during the profile and never freed (the Triton buffer)
    mm_kept_bytes: int = 0  # the encoder profile's image and outputs, alive through forward and sampler
    mm_encoder_bytes: int = (
        0  # the encoder's own forward peak, which comes first (colo.vllm.process.mm_profile)
    )
    workspace_bytes: int = 0  # the cuBLAS workspace the profile's first matmul allocates and keeps

    @property
    def kept_bytes(self) -> int:
        """What the profile allocated and still holds when it ends."""
        return self.persistent_bytes + self.workspace_bytes

    @property
    def peak_bytes(self) -> int:
        text = self.persistent_bytes + self.mm_kept_bytes + max(self.forward_bytes, self.sampler_bytes)
        return self.workspace_bytes + max(self.mm_encoder_bytes, text)


def profile_workspace_bytes(rules: VllmRules, compute_capability: tuple[int, int]) -> int:
    """The cuBLAS workspace the profile's first matmul allocates: none where the release made it before its
    startup snapshot (module docstring)."""
    return 0 if rules.cublas_in_baseline else cublas_workspace_bytes(compute_capability)


def _mlp_live_elements(arch: ModelArchitecture, tokens: int, tp: int) -> int:
    """Elements alive inside one MLP on one rank: gate_up output (2I/tp) and the activated half (I/tp)."""
    if arch.moe is None:
        return tokens * 3 * arch.intermediate_size // tp
    m = arch.moe
    routed = tokens * m.experts_per_token
    # fused_moe keeps three intermediate caches: (2I/tp), (I/tp) and (H) per routed token; the replicated
    # router's logits are whole on every rank.
    experts = routed * (3 * m.moe_intermediate_size // tp + arch.hidden_size)
    shared = tokens * 3 * m.shared_expert_intermediate_size // tp
    dense = tokens * 3 * arch.intermediate_size // tp if m.moe_layers < arch.num_layers else 0
    return max(experts + shared, dense) + tokens * m.num_experts * 2  # fp32 router logits = 2 elements


def _attention_live_elements(arch: ModelArchitecture, tokens: int, tp: int, compiled: bool) -> int:
    """The fused qkv output and the attention output; compiled, also the new q and k the native rotary
    embedding writes beside the qkv output (module docstring)."""
    head_dim = arch.global_head_dim or arch.head_dim
    q = arch.num_attention_heads * head_dim // tp
    kv = 2 * kv_heads_per_rank(arch.global_num_kv_heads or arch.num_kv_heads, tp) * head_dim
    if arch.gdn is not None:
        g = arch.gdn
        q = max(q, (2 * g.num_key_heads * g.key_head_dim + 2 * g.num_value_heads * g.value_head_dim) // tp)
    rotary = not arch.encoder_only or arch.encoder_rope != "none"  # BERT-style encoders have no rotary
    rotated = q + kv // 2 if compiled and rotary else 0
    return tokens * (2 * q + kv + rotated)


def _mixer_output_elements(arch: ModelArchitecture, tokens: int, tp: int) -> int:
    """The buffer one layer's attention (or Gated DeltaNet) op writes, [tokens, heads x value head dim]."""
    if arch.mla is not None:
        width = arch.num_attention_heads * arch.mla.v_head_dim
    else:
        width = arch.num_attention_heads * max(arch.head_dim, arch.global_head_dim or 0)
    if arch.gdn is not None:
        width = max(width, arch.gdn.num_value_heads * arch.gdn.value_head_dim)
    return tokens * (width // tp)


POOLER_HEAD_BYTES = 4  # PoolerConfig / ModelConfig.head_dtype: float32 unless the model says otherwise


def activation_peak(
    arch: ModelArchitecture,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    pooling: bool,
    sampler: SamplerProfile,
    tensor_parallel_size: int = 1,
    mm_kept_bytes: int = 0,
    stage: Stage | None = None,
    mm_encoder_bytes: int = 0,
    compiled: bool = False,
    workspace_bytes: int = 0,
) -> ActivationPeak:
    """The profile's peak on one rank of `stage` (None: the whole model). Only the last stage samples (or
    pools); every other stage keeps the buffers it receives the previous stage's hidden states and residual in,
    sized for max_num_batched_tokens and allocated once (`vllm 0.19.0 v1/worker/gpu_model_runner.py::_dummy_run`:
    make_empty_intermediate_tensors; the V2 runner in `v1/worker/gpu/model_runner.py::load_model`).
    `compiled`: torch.compile runs the model (no --enforce-eager); `workspace_bytes`: profile_workspace_bytes."""
    tokens = max_num_batched_tokens
    tp = tensor_parallel_size
    element = arch.dtype_bytes
    # hidden states and residual stream, whole on every rank; at TP > 1 the all-reduce writes a third copy
    residual = (2 + (1 if tp > 1 else 0)) * tokens * arch.hidden_size
    mlp = _mlp_live_elements(arch, tokens, tp)
    if not compiled and arch.moe is None:  # eager: the down projection's output beside gate_up and its input
        mlp += tokens * arch.hidden_size
    layer = max(mlp, _attention_live_elements(arch, tokens, tp, compiled))
    held = (
        _mixer_output_elements(arch, tokens, tp) if compiled else 0
    )  # the previous piece's attention output
    forward = (residual + layer + held) * element
    received = 0 if stage is None or stage.first else 2 * tokens * arch.hidden_size * element
    rows = min(max_num_seqs, tokens)
    if stage is not None and not stage.last:
        return ActivationPeak(forward, 0, received, mm_kept_bytes, mm_encoder_bytes, workspace_bytes)
    if pooling or arch.encoder_only:
        # the hidden states, and every token's in the head dtype (token_embed), the largest task's output
        pooled = tokens * arch.hidden_size * (element + POOLER_HEAD_BYTES) + rows * arch.hidden_size * element
        return ActivationPeak(forward, pooled, received, mm_kept_bytes, mm_encoder_bytes, workspace_bytes)
    hidden = tokens * arch.hidden_size * element if sampler.hidden_states_held else 0
    logits = rows * arch.vocab_size * sampler.bytes_per_logit
    persistent = sampler.buffer_rows * arch.vocab_size * 4 + received
    return ActivationPeak(
        forward,
        logits + hidden + rows * arch.hidden_size * element,
        persistent,
        mm_kept_bytes,
        mm_encoder_bytes,
        workspace_bytes,
    )


PROMPT_LOGPROB_CHUNK = 1024  # v1/worker/gpu/sample/prompt_logprob.py CHUNK_SIZE (0.34)


def sizing_step_bytes(
    arch: ModelArchitecture, *, max_num_batched_tokens: int, max_model_len: int, forward_bytes: int
) -> int:
    """The transient of 0.34's KV-sizing warm-up step beyond what the profile measured: a real step of
    max_num_batched_tokens with attention, whose prompt requests the default 20 prompt logprobs
    (`vllm 0.34.0 v1/worker/gpu/warmup.py::run_kv_cache_sizing_warmup`). Its logits are computed 1,024 prompt
    rows at a time beside the step's hidden states (`compute_prompt_logprobs_with_chunking`: model-dtype logits,
    a 20-wide top-k, a Triton log-softmax that materialises nothing); the forward itself is the profile's."""
    element = arch.dtype_bytes
    rows = min(PROMPT_LOGPROB_CHUNK, max_num_batched_tokens, max_model_len)
    hidden = max_num_batched_tokens * arch.hidden_size * element
    return max(forward_bytes, hidden + rows * arch.vocab_size * element)
