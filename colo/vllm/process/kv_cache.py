"""KV cache geometry and block arithmetic, as vLLM's KV cache manager does it.

Mirrors `vllm/v1/kv_cache_interface.py` (page sizes per spec), `_get_kv_cache_groups_uniform_page_size`
(grouping of hybrid models), `HybridAttentionMambaModelConfig` (attention block size raised so a Mamba/GDN
state fits one page) and `get_kv_cache_config_from_groups` / `get_max_concurrency_for_kv_cache_config`
(blocks, reported token count and concurrency).

Geometry is per tensor-parallel rank: every attention layer holds `max(1, kv_heads // tp)` KV heads (the
heads are replicated when there are fewer than ranks) and Gated DeltaNet states are split over the ranks,
while an MLA latent is stored whole on every rank (`vllm 0.8.0 config.py::ModelConfig.get_num_kv_heads` ..
`vllm 0.33.0 config/model.py::ModelConfig.get_num_kv_heads`; `vllm 0.20.0 model_executor/layers/mamba/
mamba_utils.py::MambaStateShapeCalculator.gated_delta_net_state_shape`). The release decides how sliding-window
layers get a spec, how hybrid layers are grouped and how much a recurrent state counts per request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.process.attention_type import without_kv_cache
from colo.vllm.process.pipeline import Stage, kind_indices, layer_kind
from colo.vllm.rules import VllmRules

DEFAULT_BLOCK_SIZE = (
    16  # without rules: CacheConfig's block size up to 0.33 (rules.default_block_size per release)
)
# Bytes of one cached K or V element per `--kv-cache-dtype` (`vllm 0.33.0 utils/torch_utils.py::
# STR_DTYPE_TO_TORCH_DTYPE`; the names each release accepts: colo/vllm/checkpoint/quant_methods.yaml kv_cache_dtypes).
# The per-token-head dtypes also store one fp32 scale after each head's K and each head's V, carved from the
# same KV allocation: 0.20-0.27 add `2 * block_size * num_kv_heads * 4` to the page (`vllm 0.20.0
# v1/kv_cache_interface.py::AttentionSpec.page_size_bytes`), 0.28+ make a head slot `(head_size + head_size_v)
# * 1 + 2 * 4` bytes (`vllm 0.28.0 v1/attention/backends/triton_attn.py::TritonAttentionBackend.customize_spec`);
# both are KV_DTYPE_SCALE_BYTES_PER_HEAD per K and per V head slot. Names not listed (nvfp4, int4 and
# turboquant packings, fp8_ds_mla's 656-byte MLA slot) have layouts colo does not size.
KV_DTYPE_BYTES = {
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "bfloat16": 2,
    "float16": 2,
    "int8_per_token_head": 1,
    "fp8_per_token_head": 1,
}
KV_DTYPE_SCALE_BYTES_PER_HEAD = {"int8_per_token_head": 4, "fp8_per_token_head": 4}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LayerBucket:
    """Layers that share one KV cache spec."""

    kind: str  # "full", "sliding", "mla", "linear"
    layers: int
    page_bytes: int  # bytes of one block of one layer
    block_tokens: int  # tokens a block holds (0 for state-only specs)
    window: int | None = None


@dataclass(frozen=True)
class KvGeometry:
    buckets: tuple[LayerBucket, ...]
    group_size: int
    # MambaSpec.max_memory_usage_bytes of the release: one page (<= 0.11.0), a max_model_len's worth of
    # blocks (0.11.1-0.14), one page plus one per speculative token (0.16-0.25), two pages plus one per
    # speculative token (0.26+, where prefix caching is on for hybrids and the mode is "align").
    state_blocks: str = "one_plus_spec"
    # Layer slots of one pipeline stage where its groups hold fewer layers than the whole model's (0: all)
    slots: int = 0

    @property
    def bytes_per_block(self) -> int:
        """One block id reserves a page in every layer slot of a group."""
        return (self.slots or self.group_size) * max(b.page_bytes for b in self.buckets)

    @property
    def num_groups(self) -> int:
        return sum(_cdiv(b.layers, self.group_size) for b in self.buckets)

    @property
    def block_tokens(self) -> int:
        return min(b.block_tokens for b in self.buckets if b.block_tokens) if self.has_tokens else 0

    @property
    def has_tokens(self) -> bool:
        return any(b.block_tokens for b in self.buckets)

    @property
    def has_recurrent_state(self) -> bool:
        """A hybrid model's Mamba / Gated DeltaNet layers: one state page per request, not per token."""
        return any(b.kind == "linear" for b in self.buckets)


def kv_dtype_bytes(arch: ModelArchitecture, kv_cache_dtype: str) -> int:
    """`auto` is the model dtype, except for ModelOpt checkpoints whose kv_cache_quant_algo is FP8: vLLM 0.14+
    resolves `auto` to fp8_e4m3 (`vllm 0.14.0 utils/torch_utils.py::resolve_kv_cache_dtype_string`; for older
    releases colo.vllm.checkpoint.quant_methods.resolve_architecture clears the algorithm)."""
    if kv_cache_dtype == "auto":
        return 1 if arch.quant_scheme.kv_cache_quant_algo.upper() == "FP8" else arch.dtype_bytes
    if kv_cache_dtype not in KV_DTYPE_BYTES:
        raise ValueError(
            f"colo does not size --kv-cache-dtype {kv_cache_dtype}; sized: {', '.join(KV_DTYPE_BYTES)}"
        )
    return KV_DTYPE_BYTES[kv_cache_dtype]


def head_slot_bytes(head_dim: int, element_bytes: int, kv_cache_dtype: str) -> int:
    """One token's K (or V) of one KV head: its elements, plus the per-token-head dtypes' fp32 scale."""
    return head_dim * element_bytes + KV_DTYPE_SCALE_BYTES_PER_HEAD.get(kv_cache_dtype, 0)


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """`ModelConfig.get_num_kv_heads`: heads are split over the ranks, and replicated below one per rank."""
    return max(1, kv_heads // tp)


def _gdn_state_bytes(arch: ModelArchitecture, num_speculative_tokens: int, tp: int) -> int:
    """`MambaStateShapeCalculator.gated_delta_net_state_shape`: conv state + SSM state, per layer and rank
    (both `divide(..., tp_world_size)`)."""
    g = arch.gdn
    assert g is not None
    conv_dim = g.key_head_dim * g.num_key_heads * 2 + g.value_head_dim * g.num_value_heads
    conv = (g.conv_kernel - 1 + num_speculative_tokens) * (conv_dim // tp) * arch.dtype_bytes
    ssm = (g.num_value_heads // tp) * g.key_head_dim * g.value_head_dim * g.ssm_dtype_bytes
    return conv + ssm


def mamba_state_blocks(rules: VllmRules | None, prefix_caching: bool | None = None) -> str:
    """Blocks one request holds per recurrent-state group (`MambaSpec.max_memory_usage_bytes`): the release's
    default, or what `--enable-prefix-caching` / `--no-enable-prefix-caching` make of it where the release
    has mamba cache modes. With prefix caching a Gated DeltaNet model (no mamba prefix caching of its own)
    runs mode "align", two pages plus one per speculative token; without it mode "none", one page plus one
    per speculative token (`vllm 0.22.0 model_executor/models/config.py::MambaModelConfig.
    verify_and_update_config`, `v1/kv_cache_interface.py::MambaSpec.max_memory_usage_bytes`)."""
    default = rules.mamba_blocks_per_request if rules else "one_plus_spec"
    if prefix_caching is None or rules is None or not rules.mamba_align_on_prefix_caching:
        return default
    return "two_plus_spec" if prefix_caching else "one_plus_spec"


def hybrid_group_size(sizes: list[int], ratio: float) -> int:
    """`_get_kv_cache_groups_uniform_page_size`: the fewest layers of a kind, or the most when that is less
    than `ratio` times the fewest (0.12+: 1.25, 0.18+: 1.5; 0 = always the fewest, <= 0.11)."""
    smallest, largest = min(sizes), max(sizes)
    return largest if ratio and largest < ratio * smallest else smallest


@dataclass(frozen=True)
class _AttentionPages:
    """Per-token page bytes of one rank and the layer counts they apply to, after the release's sliding rule."""

    local_token: int
    full_token: int
    full_layers: int
    sliding_layers: int


def _attention_pages(
    arch: ModelArchitecture, s: int, kv_cache_dtype: str, tp: int, sliding_rule: str, extra_full: int
) -> _AttentionPages:
    local_token = (
        2 * kv_heads_per_rank(arch.num_kv_heads, tp) * head_slot_bytes(arch.head_dim, s, kv_cache_dtype)
    )
    global_heads = kv_heads_per_rank(arch.global_num_kv_heads or arch.num_kv_heads, tp)
    # Gemma 4's global layers share one projection for K and V (attention_k_eq_v); colo still counts a K and
    # a V page, as the attention spec's page size does, which errs on the side of a smaller pool.
    global_slot = head_slot_bytes(arch.global_head_dim or arch.head_dim, s, kv_cache_dtype)
    global_token = 2 * global_heads * global_slot
    sliding = arch.sliding_attention_layers
    full = arch.full_attention_layers + extra_full
    if sliding and (sliding_rule == "full" or (sliding_rule == "uniform_only" and full)):
        # Before hybrid groups (0.9.1) a sliding layer is cached like a full one: always up to 0.8.2, and
        # from 0.8.3 whenever not every layer slides (unify_hybrid_kv_cache_specs).
        return _AttentionPages(local_token, max(local_token, global_token), full + sliding, 0)
    return _AttentionPages(local_token, global_token if sliding else local_token, full, sliding)


def _attention_buckets(arch: ModelArchitecture, pages: _AttentionPages, block: int) -> list[LayerBucket]:
    """`unify_kv_cache_spec_page_size`: every group must have the same page, so a spec with a smaller
    per-token page gets proportionally more tokens per block."""
    full, local = pages.full_token, pages.local_token
    largest = max(full if pages.full_layers else 0, local if pages.sliding_layers else 0)
    buckets = []
    if pages.full_layers:
        buckets.append(LayerBucket("full", pages.full_layers, largest * block, block * largest // full))
    if pages.sliding_layers:
        window = arch.sliding_window
        buckets.append(
            LayerBucket("sliding", pages.sliding_layers, largest * block, block * largest // local, window)
        )
    if arch.linear_attention_layers:
        buckets.append(LayerBucket("linear", arch.linear_attention_layers, largest * block, 0))
    return buckets


def kv_geometry(
    arch: ModelArchitecture,
    kv_cache_dtype: str = "auto",
    *,
    num_speculative_tokens: int = 0,
    mtp_draft_layers: int = 0,
    tensor_parallel_size: int = 1,
    rules: VllmRules | None = None,
    stage: Stage | None = None,
    prefix_caching: bool | None = None,
    pooling: bool = False,
) -> KvGeometry | None:
    """The layer buckets of one model on one tensor-parallel rank of `stage` (None: every layer); None for
    models without a KV cache (an encoder, or a pooling decoder the release builds bidirectional:
    colo.vllm.process.attention_type). Without `rules`, the newest releases' grouping applies and only an encoder
    goes without. `prefix_caching`: what the server sets (None: the release's default), for recurrent-state pages."""
    if without_kv_cache(arch, rules, pooling=pooling):
        return None
    if stage is not None and stage.size > 1:
        return _stage_geometry(
            arch,
            kv_cache_dtype,
            stage,
            rules,
            num_speculative_tokens=num_speculative_tokens,
            tensor_parallel_size=tensor_parallel_size,
            prefix_caching=prefix_caching,
        )
    tp = tensor_parallel_size
    state_blocks = mamba_state_blocks(rules, prefix_caching)
    base = rules.default_block_size if rules else DEFAULT_BLOCK_SIZE
    s = kv_dtype_bytes(arch, kv_cache_dtype)
    if arch.mla is not None:  # one latent "head", stored whole on every rank
        per_token = (arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim) * s
        layers = arch.num_layers + mtp_draft_layers
        mla = LayerBucket("mla", layers, per_token * base, base)
        return KvGeometry((mla,), layers, state_blocks)

    sliding_rule = rules.sliding_window_kv if rules else "hybrid"
    pages = _attention_pages(arch, s, kv_cache_dtype, tp, sliding_rule, mtp_draft_layers)
    block = base
    if arch.linear_attention_layers:
        # HybridAttentionMambaModelConfig / Platform._align_hybrid_block_size: the attention block grows in
        # steps of the configured block size (16 tokens up to 0.33, 64 from 0.34: `kernel_block_alignment_size
        # = max(smallest kernel block, cache_config.block_size)`) until one attention page is at least one
        # GDN state; the state is then padded up to that page. Both pages are per rank, so kv heads replicated
        # over the ranks shrink the block.
        state_bytes = _gdn_state_bytes(arch, num_speculative_tokens, tp)
        block = base * _cdiv(state_bytes, base * pages.full_token)
    buckets = _attention_buckets(arch, pages, block)
    sizes = [b.layers for b in buckets]
    group_size = hybrid_group_size(sizes, rules.hybrid_group_size_ratio if rules else 1.5)
    return KvGeometry(tuple(buckets), group_size, state_blocks)


def _stage_arch(arch: ModelArchitecture, stage: Stage) -> ModelArchitecture:
    """The model cut down to the stage's layers, kinds counted where they fall."""
    kinds = [layer_kind(arch, i) for i in range(stage.start, stage.end)]
    return replace(
        arch,
        num_layers=stage.layers,
        full_attention_layers=kinds.count("full"),
        sliding_attention_layers=kinds.count("sliding"),
        linear_attention_layers=kinds.count("linear"),
    )


def _stage_slots(arch: ModelArchitecture, whole: KvGeometry, stage: Stage, sliding_cached_full: bool) -> int:
    """Layers of the fullest group on the stage: each kind's layers, in order, form groups of the whole model's
    group size (`_get_kv_cache_groups_uniform_page_size`), and a stage keeps the members it holds
    (`_project_kv_cache_groups_to_worker`); its pool reserves one page a slot (`get_kv_cache_config_from_groups`)."""
    if arch.mla is not None or not (arch.sliding_attention_layers or arch.linear_attention_layers):
        return stage.layers
    if arch.linear_attention_layers:
        lists = [kind_indices(arch, "full"), kind_indices(arch, "linear")]
    elif sliding_cached_full:  # sliding layers share the full-attention spec before hybrid groups
        lists = [list(range(arch.num_layers))]
    else:
        lists = [kind_indices(arch, "full"), kind_indices(arch, "sliding")]
    size = whole.group_size
    counts = [
        sum(1 for i in layers[g : g + size] if stage.holds(i))
        for layers in lists
        for g in range(0, len(layers), size)
    ]
    return max(counts, default=0)


def _stage_geometry(
    arch: ModelArchitecture,
    kv_cache_dtype: str,
    stage: Stage,
    rules: VllmRules | None,
    *,
    num_speculative_tokens: int,
    tensor_parallel_size: int,
    prefix_caching: bool | None = None,
) -> KvGeometry | None:
    """One pipeline stage's KV geometry. Up to 0.10.2 each stage forms groups of its own layers
    (`get_kv_cache_config` per worker); from 0.11 the groups are the whole model's, projected on the stage: the
    blocks a request needs and the group count stay the whole model's, a block costs the stage's slots."""

    def geometry(model: ModelArchitecture) -> KvGeometry | None:
        return kv_geometry(
            model,
            kv_cache_dtype,
            num_speculative_tokens=num_speculative_tokens,
            tensor_parallel_size=tensor_parallel_size,
            rules=rules,
            prefix_caching=prefix_caching,
        )

    if rules is not None and rules.pp_kv_groups == "per_stage":
        return geometry(_stage_arch(arch, stage))
    whole = geometry(arch)
    if whole is None:
        return None
    sliding_rule = rules.sliding_window_kv if rules else "hybrid"
    cached_full = sliding_rule == "full" or (
        sliding_rule == "uniform_only" and arch.full_attention_layers > 0
    )
    return replace(whole, slots=max(1, _stage_slots(arch, whole, stage, cached_full)))


def blocks_per_request(
    geometry: KvGeometry,
    max_model_len: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int = 0,
    sliding_inflight_batches: int = 1,
) -> int:
    """Σ over groups of the blocks one max_model_len request needs (`max_memory_usage_bytes / page`)."""
    total = 0
    for bucket in geometry.buckets:
        groups = _cdiv(bucket.layers, geometry.group_size)
        if bucket.kind in ("full", "mla"):
            per_group = _cdiv(max_model_len, bucket.block_tokens)
        elif bucket.kind == "sliding":
            assert bucket.window is not None
            inflight = sliding_inflight_batches * max_num_batched_tokens
            tokens = min(bucket.window - 1 + inflight, max_model_len)
            per_group = _cdiv(tokens, bucket.block_tokens) + 1
        elif geometry.state_blocks == "one_page":  # a recurrent state
            per_group = 1
        elif geometry.state_blocks == "max_model_len":  # 0.11.1-0.14: counted like a full-attention layer
            per_group = _cdiv(max_model_len, geometry.block_tokens)
        elif geometry.state_blocks == "two_plus_spec":  # mamba_cache_mode "align" (prefix caching on, 0.26+)
            per_group = 2 + num_speculative_tokens
        else:  # one block, plus one per speculative token
            per_group = 1 + num_speculative_tokens
        total += groups * per_group
    return total


@dataclass(frozen=True)
class KvCapacity:
    num_blocks: int
    tokens: int
    max_concurrency: float
    bytes_per_block: int
    blocks_per_request: int


def kv_capacity(
    geometry: KvGeometry,
    kv_bytes: int,
    *,
    max_model_len: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    tokens_from_concurrency: bool,
    sliding_inflight_batches: int = 1,
    concurrency_from_tokens: bool = False,
) -> KvCapacity:
    """Blocks from bytes, then the two figures vLLM logs: `GPU KV cache size` and `Maximum concurrency`.

    `concurrency_from_tokens`: releases up to 0.9.0 report tokens / max_model_len
    (`vllm 0.8.0 v1/core/kv_cache_utils.py::_get_kv_cache_config_uniform_type`)."""
    per_block = geometry.bytes_per_block
    num_blocks = max(0, kv_bytes // per_block)
    per_request = blocks_per_request(
        geometry, max_model_len, max_num_batched_tokens, num_speculative_tokens, sliding_inflight_batches
    )
    concurrency = num_blocks / per_request if per_request else 0.0
    if concurrency_from_tokens:
        tokens = num_blocks * geometry.block_tokens
        return KvCapacity(num_blocks, tokens, tokens / max_model_len, per_block, per_request)
    if tokens_from_concurrency:
        tokens = int(concurrency * max_model_len)
    else:
        tokens = num_blocks // geometry.num_groups * geometry.block_tokens
    return KvCapacity(num_blocks, tokens, concurrency, per_block, per_request)


def committed_blocks(geometry: KvGeometry, kv_bytes: int, granule: int) -> int:
    """`ExtensibleKVCache.blocks_within` (0.34): the most blocks whose pages fit in `kv_bytes` once each
    segment is committed in whole granules. The default layout (LBNHC, layer outermost) gives every layer
    slot its own segment of num_blocks pages (`vllm 0.34.0 v1/worker/extensible_kv_cache.py::_segments`,
    `physical_bytes_for`), so up to a granule a slot is lost to rounding."""
    if kv_bytes <= 0:
        return 0
    segments = geometry.slots or geometry.group_size
    page = max(b.page_bytes for b in geometry.buckets)
    granules_per_segment = kv_bytes // (segments * granule)
    return min(granules_per_segment * granule // page, kv_bytes // geometry.bytes_per_block)


def kv_bytes_for_requests(
    geometry: KvGeometry,
    requests: float,
    *,
    max_model_len: int,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    null_block_reserved: bool,
    sliding_inflight_batches: int = 1,
) -> int:
    """Smallest KV pool that holds `requests` concurrent max_model_len requests."""
    per_request = blocks_per_request(
        geometry, max_model_len, max_num_batched_tokens, num_speculative_tokens, sliding_inflight_batches
    )
    blocks = ceil(per_request * requests) + (1 if null_block_reserved else 0)
    return blocks * geometry.bytes_per_block


def max_model_len_for(
    geometry: KvGeometry,
    kv_bytes: int,
    *,
    max_num_batched_tokens: int,
    num_speculative_tokens: int,
    upper: int,
    sliding_inflight_batches: int = 1,
) -> int:
    """Largest max_model_len one request fits in (vLLM's 'estimated maximum model length')."""
    blocks = kv_bytes // geometry.bytes_per_block
    low, high = 0, upper
    while low < high:
        mid = (low + high + 1) // 2
        if (
            blocks_per_request(
                geometry, mid, max_num_batched_tokens, num_speculative_tokens, sliding_inflight_batches
            )
            <= blocks
        ):
            low = mid
        else:
            high = mid - 1
    return low
