"""Bytes of weights one vLLM process holds on the GPU after loading ("Model loading took X GiB"), per rank.

vLLM measures torch-allocated bytes after `load_model`: the weights in their on-GPU form (packed quantized
tensors and their scales as the chosen kernel re-lays them), for every expert of an MoE model. colo builds the
modules vLLM allocates on one tensor-parallel rank (colo.vllm.process.weight_modules), gives each the format its
quantization method assigns it (colo.vllm.checkpoint.quant_matching, the method resolved per release and GPU by
colo.vllm.checkpoint.quant_methods), and sizes each (colo.vllm.process.quant_bytes).

When the checkpoint's exact tensor bytes are known (safetensors headers, or an index's total_size), they replace
the geometry's estimate of the checkpoint, and the geometry supplies only what loading changes: the per-format
difference between the file and the GPU, the parts vLLM does not load, and what tensor parallelism leaves on
each rank.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache

from colo.catalog import GpuSpec
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.quant_matching import module_format
from colo.vllm.checkpoint.quant_methods import ResolvedQuantization, log_informed, resolve_quantization
from colo.vllm.checkpoint.quantization import UNQUANTIZED, WeightFormat
from colo.vllm.process.allocator import block_overhead
from colo.vllm.process.engine_limits import default_max_model_len
from colo.vllm.process.pipeline import Stage
from colo.vllm.process.quant_bytes import Layout, linear_checkpoint_bytes, linear_gpu_bytes
from colo.vllm.process.weight_modules import (
    ExpertStack,
    Inventory,
    LinearShape,
    module_inventory,
    mtp_inventory,
    vision_tensor_sizes,
)
from colo.vllm.rules import VllmRules, rules_for, supported_range

PARTS = (
    "embedding",
    "lm_head",
    "attention",
    "mlp",
    "experts",
    "router",
    "linear_attention",
    "small_tensors",
    "mtp",
    "vision",
)


@dataclass(frozen=True)
class WeightParts:
    """Parameter counts by part of the model, as the checkpoint stores them."""

    embedding: int
    lm_head: int
    attention_linear: int
    mlp_linear: int
    expert_linear: int
    router: int
    linear_attention_linear: int
    small_tensors: int  # norms, biases, conv kernels, decay parameters: always kept in model dtype
    mtp: int
    vision: int

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention_linear
            + self.mlp_linear
            + self.expert_linear
            + self.router
            + self.linear_attention_linear
            + self.small_tensors
            + self.mtp
            + self.vision
        )


@dataclass(frozen=True)
class WeightEstimate:
    bytes: int  # on one rank
    parameters: int  # of the whole model
    method: str  # "safetensors" or "geometry"
    detail: dict[str, int]  # bytes by part on one rank
    quantization: str = "none"  # the method vLLM runs


def _counts(inv: Inventory) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for linear in inv.linears:
        counts[linear.part] += linear.full_k * linear.full_n
    for stack in inv.experts:
        counts[stack.part] += stack.experts * 3 * stack.hidden * stack.full_inter
    for dense in inv.dense:
        counts[dense.part] += dense.checkpoint_elements
    return counts


def parameter_parts(arch: ModelArchitecture, *, pooling: bool, load_mtp: bool) -> WeightParts:
    counts = _counts(module_inventory(arch, tensor_parallel_size=1, pooling=pooling, load_mtp=load_mtp))
    return WeightParts(
        counts["embedding"],
        counts["lm_head"],
        counts["attention"],
        counts["mlp"],
        counts["experts"],
        counts["router"],
        counts["linear_attention"],
        counts["small_tensors"],
        counts["mtp"],
        counts["vision"],
    )


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def mxfp4_expert_dims(layout: Layout, hidden: int, inter: int) -> tuple[int, int, int]:
    """gpt-oss experts: (hidden, intermediate) after the MXFP4 backend's padding, and bias bytes per element.

    `vllm 0.10.1 / 0.14.0 model_executor/layers/quantization/mxfp4.py::Mxfp4MoEMethod.create_weights` and
    `get_mxfp4_backend`: Blackwell (SM100) with FlashInfer pads both to 256; Hopper with torch >= 2.8 and the
    triton_kernels package (vendored from 0.12.0, absent from earlier wheels and images) runs the Triton kernels
    (intermediate to 64, fp32 biases), whose Hopper swizzle (torch >= 2.8.1) pads further in triton_kernels
    (log-informed, quant_methods.yaml); everything else runs Marlin (intermediate to 128, hidden to 256)."""
    capability, release = layout.capability, layout.release
    if 100 <= capability < 110:
        return _round_up(hidden, 256), _round_up(inter, 256), layout.dtype_bytes
    if capability == 90 and release.torch_at_least("2.8.0") and release.triton_kernels_vendored:
        if release.torch_at_least("2.8.1"):
            hidden = _round_up(hidden, log_informed()["mxfp4_hopper_swizzle_hidden_multiple"].value)
        return hidden, _round_up(inter, 64), 4
    return _round_up(hidden, 256), _round_up(inter, 128), layout.dtype_bytes


def _expert_bytes(w: WeightFormat | None, stack: ExpertStack, layout: Layout, *, gpu: bool) -> int:
    """One fused-MoE layer: w13 (hidden -> 2 x inter) and w2 (inter -> hidden) for every expert."""
    hidden, inter = stack.hidden, stack.inter if gpu else stack.full_inter
    if w is not None and w.kind == "mxfp4" and layout.method in ("mxfp4", "gpt_oss_mxfp4"):
        bias_bytes = layout.dtype_bytes if gpu else layout.checkpoint_dtype_bytes
        if gpu:
            hidden, inter, bias_bytes = mxfp4_expert_dims(layout, hidden, inter)
        weights = 3 * hidden * inter
        return stack.experts * (weights // 2 + weights // 32 + bias_bytes * (2 * inter + hidden))
    if gpu:
        w13 = linear_gpu_bytes(w, hidden, 2 * inter, layout, experts=True)
        w2 = linear_gpu_bytes(w, inter, hidden, layout, experts=True, full_k=stack.full_inter)
    else:
        w13 = linear_checkpoint_bytes(w, hidden, 2 * inter, layout.method, layout.checkpoint_dtype_bytes)
        w2 = linear_checkpoint_bytes(w, inter, hidden, layout.method, layout.checkpoint_dtype_bytes)
    return stack.experts * (w13 + w2)


def _mla_dense_copy(
    arch: ModelArchitecture, linear: LinearShape, w: WeightFormat | None, layout: Layout
) -> int:
    """MLA keeps a model-dtype copy of a quantized kv_b_proj (W_UK/W_UV, `vllm 0.14.0 v1/attention/backends/mla/
    common.py::MLACommonImpl.process_weights_after_loading`)."""
    if w is None or not linear.module.prefix.endswith("kv_b_proj"):
        return 0
    return linear.k * linear.n * layout.dtype_bytes


@dataclass
class _Tally:
    gpu: dict[str, int]
    checkpoint: dict[str, int]

    def add(self, part: str, gpu: int, checkpoint: int) -> None:
        self.gpu[part] = self.gpu.get(part, 0) + gpu
        self.checkpoint[part] = self.checkpoint.get(part, 0) + checkpoint


def _tally(arch: ModelArchitecture, inv: Inventory, resolved: ResolvedQuantization, layout: Layout) -> _Tally:
    tally = _Tally({part: 0 for part in PARTS}, {part: 0 for part in PARTS})
    scheme, release, s = resolved.scheme, resolved.release, arch.dtype_bytes
    f = arch.checkpoint_dtype_bytes  # the files' dtype; vLLM casts to `s` as it loads
    stored_as_is = not scheme.online  # online methods quantize a full-precision file at load
    for linear in inv.linears:
        w = module_format(scheme, linear.module, release)
        gpu = linear_gpu_bytes(w, linear.k, linear.n, layout, full_k=linear.full_k)
        ckpt = linear_checkpoint_bytes(
            w if stored_as_is else None, linear.full_k, linear.full_n, layout.method, f
        )
        tally.add(linear.part, gpu, ckpt)
        tally.add("mla_dense_copy", _mla_dense_copy(arch, linear, w, layout), 0)
    for stack in inv.experts:
        w = module_format(scheme, stack.module, release)
        tally.add(
            stack.part, _expert_bytes(w, stack, layout, gpu=True), _expert_bytes(w, stack, layout, gpu=False)
        )
    for dense in inv.dense:
        tally.add(dense.part, dense.elements * s, dense.checkpoint_elements * f)
    return tally


def _linear_tensor(w: WeightFormat | None, linear: LinearShape, layout: Layout) -> int | None:
    """A linear's weight tensor as vLLM allocates it at construction, where it keeps that tensor: full precision,
    and FP8 outside Marlin (whose repacking replaces it after loading). None: a format colo does not follow."""
    if w is None:
        return linear.k * linear.n * layout.dtype_bytes
    if w.kind == "fp8" and not layout.fp8_marlin(w):
        return linear.k * linear.n
    return None


def _expert_tensors(w: WeightFormat | None, stack: ExpertStack, layout: Layout) -> list[int] | None:
    """A fused-MoE layer's w13 and w2 stacks (`FusedMoE` allocates each as one tensor), full precision only:
    the FP8 MoE methods hand their weights to backends that may re-lay them after loading."""
    if w is not None:
        return None
    w2 = stack.experts * stack.hidden * stack.inter * layout.dtype_bytes
    return [2 * w2, w2]


def _tensor_sizes(
    arch: ModelArchitecture,
    inv: Inventory,
    resolved: ResolvedQuantization,
    layout: Layout,
    rotary: tuple[int, ...],
) -> list[int] | None:
    """The large tensors of one rank in build order: the vision tower (built first by the multimodal wrappers),
    the embedding, the rotary cache, the layers' linears and expert stacks, the lm_head last. None where a
    format is re-laid after loading (colo.vllm.process.allocator counts blocks of tensors allocated once)."""
    if resolved.scheme.online:
        return None
    sizes = vision_tensor_sizes(arch, 1) if arch.vision_parameters else []
    singles = [
        d.elements * layout.dtype_bytes for d in inv.dense if d.part not in ("small_tensors", "vision")
    ]
    sizes += [*singles, *rotary]
    heads: list[int] = []
    for linear in inv.linears:
        tensor = _linear_tensor(
            module_format(resolved.scheme, linear.module, resolved.release), linear, layout
        )
        if tensor is None:
            return None
        (heads if linear.part == "lm_head" else sizes).append(tensor)
    for stack in inv.experts:
        stacks = _expert_tensors(
            module_format(resolved.scheme, stack.module, resolved.release), stack, layout
        )
        if stacks is None:
            return None
        sizes += stacks
    return sizes + heads


def allocator_blocks(
    arch: ModelArchitecture,
    inv: Inventory,
    resolved: ResolvedQuantization,
    layout: Layout,
    rotary: tuple[int, ...],
) -> int:
    """What PyTorch's allocator blocks add to the tensors on one rank (colo.vllm.process.allocator); 0 where
    the tensors vLLM keeps are not the ones it allocated."""
    sizes = _tensor_sizes(arch, inv, resolved, layout, rotary)
    return 0 if sizes is None else block_overhead(sizes)


def resolved_for(
    arch: ModelArchitecture, gpu: GpuSpec | None, vllm_version: str | None
) -> ResolvedQuantization:
    """The method vLLM runs for this checkpoint and `--quantization` (raises QuantizationRefused as vLLM would)."""
    return _resolved(arch, gpu.compute_capability if gpu else None, vllm_version)


def _resolved(
    arch: ModelArchitecture, capability: tuple[int, int] | None, vllm_version: str | None
) -> ResolvedQuantization:
    return resolve_quantization(
        arch.quant_scheme,
        arch.quantization_flag,
        vllm_version=vllm_version,
        capability=capability,
        model_type=arch.model_type,
    )


def rotary_caches(
    arch: ModelArchitecture, vllm_version: str | None, max_model_len: int | None = None
) -> tuple[int, ...]:
    """The cos/sin caches `get_rope` leaves on the device, as the allocator sees them (colo.vllm.process.allocator):
    an encoder's one by one, a decoder's as one tensor of their total. An M-RoPE cache holds the release's
    positions factor times max_position_embeddings rows (`vllm 0.22.0 model_executor/layers/rotary_embedding/
    mrope.py::MRotaryEmbedding.__init__`: `cache_max_position_num = max_position_embeddings * 4`; 0.32+ the Qwen3
    model files pass 1, rules.yaml `mrope_cache_factor_qwen3`). `max_model_len`: the engine's, where a cache is
    sized by it (None: vLLM's default)."""
    rules = rules_for(vllm_version or supported_range()[1])
    arch = release_rotary_rows(arch, rules)
    if arch.encoder_only:
        return encoder_rotary_caches(arch, vllm_version, max_model_len)
    if not arch.mrope:
        return (arch.rotary_cache_bytes,)
    qwen3 = arch.architecture.startswith("Qwen3")
    factor = rules.mrope_cache_factor_qwen3 if qwen3 else rules.mrope_cache_factor_other
    return (arch.rotary_cache_bytes * factor,)


def release_rotary_rows(arch: ModelArchitecture, rules: VllmRules) -> ModelArchitecture:
    """The geometry with the release's rows for a dynamic-NTK cache: max_position x factor up to 0.21.0,
    max_position from 0.22.0 (vllm 0.22.0 model_executor/layers/rotary_embedding/dynamic_ntk_scaling_rope.py::
    DynamicNTKScalingRotaryEmbedding._compute_cos_sin_cache; rules.yaml dynamic_ntk_cache_rows)."""
    if rules.dynamic_ntk_cache_rows == "scaled" or not arch.rotary_cache_rows_unscaled_dynamic:
        return arch
    return replace(arch, rotary_cache_rows=arch.rotary_cache_rows_unscaled_dynamic)


def encoder_rotary_caches(
    arch: ModelArchitecture, vllm_version: str | None, max_model_len: int | None = None
) -> tuple[int, ...]:
    """An encoder's cos/sin caches: none with absolute positions (BERT, RoBERTa: no rotary embedding at all).
    A bert_with_rope encoder (GTE) holds one, of max_position_embeddings rows in the model dtype (vllm 0.9.0 -
    0.34.0 models/bert_with_rope.py::BertWithRopeAttention.__init__: `get_rope(**rotary_kwargs)`, the same
    arguments in every layer, so get_rope's cache hands every layer the same module). NomicBertModel's one has
    its trained length's rows up to 0.21.0 and max_model_len's (`max_model_len`, None: vLLM's default) from
    0.22.0 (rules.yaml nomic_context), rotary_emb_fraction x head_dim wide. ModernBERT's are
    max_position_embeddings x head_dim, one per layer or per distinct theta, in float16 or the model dtype by
    release (rules.yaml modernbert_rotary_caches, modernbert_rotary_float16)."""
    if arch.encoder_rope == "bert_with_rope":
        return (arch.rotary_cache_bytes,)
    if arch.encoder_rope not in ("nomic_bert", "modernbert"):
        return ()
    rules = rules_for(vllm_version or supported_range()[1])
    if arch.encoder_rope == "nomic_bert":
        return (nomic_rotary_rows(arch, rules, max_model_len) * (arch.rotary_dim or 0) * arch.dtype_bytes,)
    element = 2 if rules.modernbert_rotary_float16 else arch.dtype_bytes
    per_layer = rules.modernbert_rotary_caches == "per_layer"
    rows = (arch.max_position_embeddings,) * arch.num_layers if per_layer else arch.rotary_cache_rows
    return tuple(count * arch.head_dim * element for count in rows)


def nomic_rotary_rows(arch: ModelArchitecture, rules: VllmRules, max_model_len: int | None) -> int:
    """Rows of NomicBertModel's cos/sin cache: get_rope's max_position is max_trained_positions up to 0.21.0
    (arch.rotary_cache_rows, under the config's rope scaling), the engine's max_model_len from 0.22.0 (vllm
    0.22.0 models/config.py::NomicBertModelConfig.verify_and_update_model_config; the default rope and dynamic
    NTK, the context extension it passes max_trained_positions for, keep max_position rows)."""
    if rules.nomic_context == "trained_positions":
        return sum(arch.rotary_cache_rows)
    return max_model_len or default_max_model_len(arch, rules)


def _skipped_checkpoint_parts(
    arch: ModelArchitecture, resolved: ResolvedQuantization, layout: Layout, *, pooling: bool, load_mtp: bool
) -> int:
    """File bytes vLLM does not load: MTP layers without MTP speculation (counted from the geometry when only a
    total is known), and the untied lm_head of a pooling model."""
    by_part = arch.checkpoint_bytes_by_part
    skipped = 0
    if not load_mtp and "mtp" in by_part:
        skipped += by_part["mtp"]
    elif not load_mtp and arch.mtp_layers:
        skipped += sum(_tally(arch, mtp_inventory(arch, 1), resolved, layout).checkpoint.values())
    if pooling and not arch.tie_word_embeddings:
        skipped += by_part.get("lm_head", 0)
    return skipped


def _geometry_bytes(
    arch: ModelArchitecture,
    resolved: ResolvedQuantization,
    layout: Layout,
    tp: int,
    *,
    pooling: bool,
    load_mtp: bool,
) -> _Tally:
    return _stage_bytes(arch, resolved, layout, tp, None, pooling=pooling, load_mtp=load_mtp)


def _stage_bytes(
    arch: ModelArchitecture,
    resolved: ResolvedQuantization,
    layout: Layout,
    tp: int,
    stage: Stage | None,
    *,
    pooling: bool,
    load_mtp: bool,
) -> _Tally:
    inv = module_inventory(arch, tensor_parallel_size=tp, pooling=pooling, load_mtp=load_mtp, stage=stage)
    return _tally(arch, inv, resolved, layout)


def estimate_weights(
    arch: ModelArchitecture,
    *,
    pooling: bool = False,
    load_mtp: bool = False,
    load_vision: bool = True,
    tensor_parallel_size: int = 1,
    gpu: GpuSpec | None = None,
    vllm_version: str | None = None,
    stage: Stage | None = None,
    max_model_len: int | None = None,
) -> WeightEstimate:
    """Bytes on one of `tensor_parallel_size` ranks after loading, for `vllm_version` (None: the newest colo
    knows) on `gpu` (None: one with native FP8). Rotary caches are included; transient load-time copies are not.
    `load_vision` False: the vision tower is not built (--language-model-only, or no image or video allowed).
    `stage`: one pipeline stage's layers, embedding and head (None: the whole model). `max_model_len`: the
    engine's, read only where a rotary cache is sized by it (NomicBertModel from 0.22.0; None: vLLM's default).

    The figure depends on the GPU only through its compute capability; the planner sizes one process many
    times while it searches utilizations (and `colo pack` many pairs), so equal questions are answered once."""
    capability = gpu.compute_capability if gpu else None
    length = max_model_len if arch.encoder_rope == "nomic_bert" else None  # one cache entry for the others
    return _estimate(
        _ArchKey(arch),
        pooling,
        load_mtp,
        load_vision,
        tensor_parallel_size,
        capability,
        vllm_version,
        stage,
        length,
    )


@dataclass(frozen=True, eq=False)
class _ArchKey:
    """A ModelArchitecture as a cache key: it holds mappings, so it is hashed and compared by its full repr."""

    arch: ModelArchitecture

    def __hash__(self) -> int:
        return hash(repr(self.arch))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ArchKey) and repr(self.arch) == repr(other.arch)


def with_stored_width(arch: ModelArchitecture) -> ModelArchitecture:
    """A full-precision checkpoint with its element width as its files hold it, where exact bytes were read.

    config.json's dtype names what the model was saved as; a checkpoint exported again later (16-bit
    safetensors beside a float32 save) keeps that name. vLLM casts every tensor to the model dtype as it loads,
    so the width only decides how the file's bytes turn into parameters: 2 or 4 bytes, whichever the exact
    byte count per parameter of the geometry lies nearer."""
    if arch.checkpoint_bytes is None or arch.quant_scheme != UNQUANTIZED:
        return arch
    parameters = parameter_parts(arch, pooling=False, load_mtp=True).total
    if parameters <= 0:
        return arch
    stored = 4 if arch.checkpoint_bytes / parameters > 3 else 2
    if stored == arch.checkpoint_dtype_bytes:
        return arch
    return replace(arch, checkpoint_dtype="float32" if stored == 4 else "bfloat16")


@lru_cache(maxsize=4096)
def _estimate(
    key: _ArchKey,
    pooling: bool,
    load_mtp: bool,
    load_vision: bool,
    tensor_parallel_size: int,
    gpu_capability: tuple[int, int] | None,
    vllm_version: str | None,
    stage: Stage | None,
    max_model_len: int | None,
) -> WeightEstimate:
    arch = with_stored_width(key.arch)
    resolved = _resolved(arch, gpu_capability, vllm_version)
    capability = gpu_capability or (9, 0)
    layout = Layout(
        resolved.method,
        resolved.release,
        capability[0] * 10 + capability[1],
        arch.dtype_bytes,
        arch.checkpoint_dtype_bytes if arch.checkpoint_dtype_bytes != arch.dtype_bytes else 0,
    )
    rotary = rotary_caches(arch, vllm_version, max_model_len)
    if load_vision or not arch.vision_parameters:
        return _loaded_weights(
            arch, resolved, layout, tensor_parallel_size, 0, pooling, load_mtp, stage, rotary
        )
    # The tower's file bytes are read but never loaded: by part where headers were read, else by geometry.
    text_only = replace(arch, vision_parameters=0)
    tower = arch.checkpoint_bytes_by_part.get("vision")
    if tower is None:
        flags = {"pooling": pooling, "load_mtp": load_mtp}
        whole = _geometry_bytes(arch, resolved, layout, 1, **flags)
        tower = sum(whole.checkpoint.values()) - sum(
            _geometry_bytes(text_only, resolved, layout, 1, **flags).checkpoint.values()
        )
    return _loaded_weights(
        text_only, resolved, layout, tensor_parallel_size, tower, pooling, load_mtp, stage, rotary
    )


def _loaded_weights(
    arch: ModelArchitecture,
    resolved: ResolvedQuantization,
    layout: Layout,
    tensor_parallel_size: int,
    unloaded_file_bytes: int,
    pooling: bool,
    load_mtp: bool,
    stage: Stage | None = None,
    rotary_tensors: tuple[int, ...] = (),
) -> WeightEstimate:
    flags = {"pooling": pooling, "load_mtp": load_mtp}
    inv = module_inventory(arch, tensor_parallel_size=tensor_parallel_size, stage=stage, **flags)
    tally = _tally(arch, inv, resolved, layout)
    # get_rope caches each distinct rotary embedding once per process: on every stage with an attention layer
    # (an encoder without rotary embeddings comes with none)
    attention_free = stage is not None and stage.layers == 0
    rotary_cache = sum(rotary_tensors)
    rotary = 0 if attention_free else rotary_cache
    detail = {**tally.gpu, "rotary": rotary}
    rank_bytes = sum(detail.values())
    blocks = allocator_blocks(arch, inv, resolved, layout, rotary_tensors if rotary else ())
    detail["allocator_blocks"] = blocks
    parameters = parameter_parts(arch, pooling=pooling, load_mtp=load_mtp).total
    if arch.checkpoint_bytes is None:
        return WeightEstimate(rank_bytes + blocks, parameters, "geometry", detail, resolved.method)
    # Exact file bytes: what the geometry did not foresee in the file is spread over the ranks like the rest.
    loaded = (
        arch.checkpoint_bytes
        - unloaded_file_bytes
        - _skipped_checkpoint_parts(arch, resolved, layout, **flags)
    )
    whole_model = stage is None or stage.size == 1
    whole = (
        tally
        if whole_model and tensor_parallel_size == 1
        else _geometry_bytes(arch, resolved, layout, 1, **flags)
    )
    unexplained = loaded - sum(whole.checkpoint.values())
    if resolved.method == "none" and arch.checkpoint_dtype_bytes != arch.dtype_bytes:
        unexplained = unexplained * arch.dtype_bytes // arch.checkpoint_dtype_bytes  # cast like the rest
    detail["checkpoint_residual"] = unexplained * rank_bytes // (sum(whole.gpu.values()) + rotary_cache)
    return WeightEstimate(
        rank_bytes + detail["checkpoint_residual"] + blocks,
        parameters,
        "safetensors",
        detail,
        resolved.method,
    )
