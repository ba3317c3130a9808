"""The modules of a model as vLLM builds them on one tensor-parallel rank: quantizable linears (with their vLLM
prefix, so quantization ignore lists can match them), fused-MoE expert stacks, and the tensors no method
quantizes (embeddings, norms, biases, routers, convolution kernels, the vision tower).

Per rank (`vllm 0.33.0 model_executor/layers/linear.py`, `…/vocab_parallel_embedding.py`,
`…/fused_moe/layer.py::FusedMoE.__init__`): column-parallel layers split their outputs N ways, row-parallel
layers their inputs; QKV keeps `max(1, kv_heads // N)` KV heads per rank (replicated below one head a rank);
experts split their intermediate width; the vocabulary is padded to a multiple of 64, then split. Replicated on
every rank: norms, MoE routers and shared-expert gates, MLA's q_a/kv_a projections, row-parallel biases and the
rotary cache. Vision towers shard their linears like the decoder (`vllm 0.26.0 model_executor/models/qwen3_vl.py::
Qwen3_VisionMLP`, `…/siglip.py`: Column/RowParallelLinear; `--mm-encoder-tp-mode data`, 0.10.2+, replicates
them instead), so colo splits the tower N ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.quant_matching import ModuleRef
from colo.vllm.process.pipeline import Stage, layer_kind
from colo.vllm.rules import pp_placement

VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE
Split = Literal["column", "row", "replicated"]


@dataclass(frozen=True)
class LinearShape:
    """One linear layer: its inputs K and outputs N on one rank, and as the checkpoint stores it."""

    module: ModuleRef
    part: str
    k: int
    n: int
    full_k: int
    full_n: int


@dataclass(frozen=True)
class ExpertStack:
    """A fused-MoE layer: `experts` x (w13: hidden -> 2 x inter, w2: inter -> hidden) on one rank."""

    module: ModuleRef
    part: str
    experts: int
    hidden: int
    inter: int  # intermediate width per rank
    full_inter: int


@dataclass(frozen=True)
class DenseTensors:
    """Tensors kept in the model dtype: elements allocated on one rank, and stored in the checkpoint."""

    part: str
    elements: int
    checkpoint_elements: int


@dataclass
class Inventory:
    linears: list[LinearShape] = field(default_factory=list)
    experts: list[ExpertStack] = field(default_factory=list)
    dense: list[DenseTensors] = field(default_factory=list)

    def linear(self, part: str, module: ModuleRef, k: int, n: int, split: Split, tp: int) -> None:
        rank_k = k // tp if split == "row" else k
        rank_n = n // tp if split == "column" else n
        self.linears.append(LinearShape(module, part, rank_k, rank_n, k, n))

    def tensors(self, part: str, elements: int, split: Split, tp: int) -> None:
        self.dense.append(DenseTensors(part, elements // tp if split == "column" else elements, elements))


def _fused(prefix: str, name: str, shards: tuple[str, ...]) -> ModuleRef:
    return ModuleRef(f"{prefix}.{name}", shards=tuple(f"{prefix}.{shard}" for shard in shards))


def _kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """`QKVParallelLinear`: each rank holds at least one KV head (`vllm 0.33.0 linear.py`)."""
    return max(1, kv_heads // tp)


def _standard_attention(
    inv: Inventory, arch: ModelArchitecture, prefix: str, tp: int, global_layer: bool
) -> None:
    h = arch.hidden_size
    head_dim = arch.global_head_dim if global_layer and arch.global_head_dim else arch.head_dim
    kv_heads = arch.global_num_kv_heads if global_layer and arch.global_num_kv_heads else arch.num_kv_heads
    kv_tensors = 1 if global_layer and arch.global_k_eq_v else 2
    q_out = arch.num_attention_heads * head_dim * (2 if arch.attn_output_gate else 1)
    kv_out = kv_heads * head_dim * kv_tensors
    rank_n = q_out // tp + _kv_heads_per_rank(kv_heads, tp) * head_dim * kv_tensors
    qkv = _fused(f"{prefix}.self_attn", "qkv_proj", ("q_proj", "k_proj", "v_proj"))
    inv.linears.append(LinearShape(qkv, "attention", h, rank_n, h, q_out + kv_out))
    o_in = arch.num_attention_heads * head_dim
    inv.linear("attention", ModuleRef(f"{prefix}.self_attn.o_proj"), o_in, h, "row", tp)
    inv.tensors("small_tensors", 2 * head_dim, "replicated", tp)  # q/k norms (Qwen3, Gemma)
    if arch.attention_bias:  # column-parallel biases follow their outputs
        inv.dense.append(DenseTensors("small_tensors", rank_n, q_out + kv_out))


def _mla_attention(inv: Inventory, arch: ModelArchitecture, prefix: str, tp: int) -> None:
    m, h, heads = arch.mla, arch.hidden_size, arch.num_attention_heads
    assert m is not None
    at = f"{prefix}.self_attn"
    q_out = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    if m.q_lora_rank:
        inv.linear("attention", ModuleRef(f"{at}.q_a_proj"), h, m.q_lora_rank, "replicated", tp)
        inv.linear("attention", ModuleRef(f"{at}.q_b_proj"), m.q_lora_rank, q_out, "column", tp)
        inv.tensors("small_tensors", m.q_lora_rank, "replicated", tp)
    else:
        inv.linear("attention", ModuleRef(f"{at}.q_proj"), h, q_out, "column", tp)
    kv_a = m.kv_lora_rank + m.qk_rope_head_dim
    inv.linear("attention", ModuleRef(f"{at}.kv_a_proj_with_mqa"), h, kv_a, "replicated", tp)
    kv_b = heads * (m.qk_nope_head_dim + m.v_head_dim)
    inv.linear("attention", ModuleRef(f"{at}.kv_b_proj"), m.kv_lora_rank, kv_b, "column", tp)
    inv.linear("attention", ModuleRef(f"{at}.o_proj"), heads * m.v_head_dim, h, "row", tp)
    inv.tensors("small_tensors", m.kv_lora_rank, "replicated", tp)


def _gdn(inv: Inventory, arch: ModelArchitecture, prefix: str, tp: int) -> None:
    """Gated DeltaNet: Qwen3.5/3.6 checkpoints store in_proj_qkv/in_proj_z and in_proj_b/in_proj_a, which vLLM
    fuses (`vllm 0.33.0 models/qwen3_5.py` packed_modules_mapping); Qwen3-Next stores the fused names."""
    g, h = arch.gdn, arch.hidden_size
    assert g is not None
    key_dim, value_dim = g.num_key_heads * g.key_head_dim, g.num_value_heads * g.value_head_dim
    split_names = "Qwen3_5" in arch.architecture
    at = f"{prefix}.linear_attn"
    qkvz = _fused(at, "in_proj_qkvz", ("in_proj_qkv", "in_proj_z") if split_names else ())
    inv.linear("linear_attention", qkvz, h, 2 * key_dim + 2 * value_dim, "column", tp)
    ba = _fused(at, "in_proj_ba", ("in_proj_b", "in_proj_a") if split_names else ())
    inv.linear("linear_attention", ba, h, 2 * g.num_value_heads, "column", tp)
    inv.linear("linear_attention", ModuleRef(f"{at}.out_proj"), value_dim, h, "row", tp)
    inv.tensors(
        "small_tensors", (2 * key_dim + value_dim) * g.conv_kernel + 2 * g.num_value_heads, "column", tp
    )
    inv.tensors("small_tensors", g.value_head_dim, "replicated", tp)


def _dense_mlp(inv: Inventory, arch: ModelArchitecture, prefix: str, width: int, part: str, tp: int) -> None:
    h = arch.hidden_size
    gated = not arch.encoder_only or arch.gated_encoder_mlp  # BERT-style MLPs have no gate projection
    gate_up = (
        _fused(prefix, "gate_up_proj", ("gate_proj", "up_proj")) if gated else ModuleRef(f"{prefix}.up_proj")
    )
    inv.linear(part, gate_up, h, (2 if gated else 1) * width, "column", tp)
    inv.linear(part, ModuleRef(f"{prefix}.down_proj"), width, h, "row", tp)


def _moe_names(arch: ModelArchitecture) -> tuple[str, str]:
    """The MoE block's attribute and its shared expert's, as vLLM's model classes name them."""
    name = arch.architecture
    block = "block_sparse_moe" if "Mixtral" in name else "mlp"
    shared = "shared_experts" if any(k in name for k in ("Deepseek", "Glm4Moe", "Kimi")) else "shared_expert"
    return block, shared


def _sparse_mlp(inv: Inventory, arch: ModelArchitecture, prefix: str, part: str, tp: int) -> None:
    """Router, routed experts and the shared expert (its dense MLP goes to `part`)."""
    m, h = arch.moe, arch.hidden_size
    assert m is not None
    block, shared = _moe_names(arch)
    inv.tensors("router", h * m.num_experts, "replicated", tp)  # the router stays in the model dtype
    module = ModuleRef(f"{prefix}.{block}.experts", kind="experts", class_name="FusedMoE")
    inter = m.moe_intermediate_size
    inv.experts.append(ExpertStack(module, "experts", m.num_experts, h, inter // tp, inter))
    if m.shared_expert_intermediate_size:
        width = m.shared_expert_intermediate_size
        _dense_mlp(inv, arch, f"{prefix}.{block}.{shared}", width, part, tp)
        inv.tensors("router", h, "replicated", tp)  # shared_expert_gate


def _attention_layer(
    inv: Inventory, arch: ModelArchitecture, prefix: str, tp: int, global_layer: bool
) -> None:
    if arch.mla is not None:
        _mla_attention(inv, arch, prefix, tp)
    else:
        _standard_attention(inv, arch, prefix, tp, global_layer)


def _decoder_layer(inv: Inventory, arch: ModelArchitecture, index: int, tp: int) -> None:
    prefix = f"model.layers.{index}"
    layers = arch.num_layers
    kind = layer_kind(arch, index)
    if kind == "linear":
        _gdn(inv, arch, prefix, tp)
    else:
        global_layer = bool(arch.sliding_attention_layers) and kind == "full"
        _attention_layer(inv, arch, prefix, tp, global_layer)
    sparse_from = layers - (arch.moe.moe_layers if arch.moe else 0)
    if arch.moe is not None and index >= sparse_from:
        _sparse_mlp(inv, arch, prefix, "mlp", tp)
    else:
        _dense_mlp(inv, arch, f"{prefix}.mlp", arch.intermediate_size, "mlp", tp)
    inv.tensors("small_tensors", 2 * arch.hidden_size, "replicated", tp)  # input and post-attention norms


def mtp_inventory(arch: ModelArchitecture, tp: int) -> Inventory:
    """Multi-token prediction: DeepSeek/GLM name them `model.layers.{num_hidden_layers + i}`
    (`vllm 0.14.0 models/deepseek_v2.py::get_spec_layer_idx_from_weight_name`), Qwen3-Next/3.5 `mtp.layers.i`;
    each is one decoder layer plus a projection of the joined embedding and hidden state."""
    h = arch.hidden_size
    inv = Inventory()
    for j in range(arch.mtp_layers):
        prefix = f"model.layers.{arch.num_layers + j}" if arch.mla is not None else f"mtp.layers.{j}"
        _attention_layer(inv, arch, prefix, tp, global_layer=False)
        if arch.moe is not None:
            _sparse_mlp(inv, arch, prefix, "mlp", tp)
        else:
            _dense_mlp(inv, arch, f"{prefix}.mlp", arch.intermediate_size, "mlp", tp)
        inv.linear("mtp", ModuleRef(f"{prefix}.eh_proj" if arch.mla else "mtp.fc"), 2 * h, h, "column", tp)
        inv.tensors("mtp", 4 * h, "replicated", tp)
    return Inventory(
        [replace(item, part="mtp") for item in inv.linears],
        [replace(item, part="mtp") for item in inv.experts],
        [replace(item, part="mtp") for item in inv.dense],
    )


def padded_vocab(vocab: int) -> int:
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


def stage_holds(arch: ModelArchitecture, stage: Stage) -> tuple[bool, bool, bool]:
    """Whether `stage` builds the embedding, the final norm and the lm_head, as the model class places them
    (colo/vllm/pp_support.yaml): the Llama pattern puts the embedding on the first stage (and on the last when
    tied: the lm_head shares that copy) and the final norm and lm_head on the last; other classes build some of
    them on every stage."""
    where = pp_placement(arch.architecture) if stage.size > 1 else None
    every = (
        (where.embedding == "every", where.norm == "every", where.lm_head == "every")
        if where
        else (False,) * 3
    )
    embedding = stage.first or every[0] or (arch.tie_word_embeddings and stage.last)
    return embedding, stage.last or every[1], stage.last or every[2]


def _encoder_tensors(inv: Inventory, arch: ModelArchitecture, tp: int) -> None:
    """What an encoder holds beside its decoder-shaped layers. BERT-style: position and token-type embeddings, the
    embedding norm, and every layer's biases and norms. bert_with_rope (vllm 0.22.0 models/bert_with_rope.py::
    BertWithRopeEmbedding: no position table; token types a VocabParallelEmbedding, padded like the vocabulary):
    the token types, the embedding norm, and every layer's qkv, output and down biases and its two norms
    (GteNewModel.__init__ drops gate_up_proj's bias). NomicBertModel, a BertWithRope too: the same without
    biases, or with every linear's, the MLP's gate_up or up included, where its config's qkv_proj_bias is set
    (`bias=config.bias`). ModernBERT (models/modernbert.py): the embedding norm only."""
    h = arch.hidden_size
    if arch.encoder_rope == "none":
        inv.tensors("embedding", (arch.max_position_embeddings + 2) * h + 4 * h, "replicated", tp)
        inv.tensors("small_tensors", arch.num_layers * (arch.intermediate_size + 9 * h), "replicated", tp)
    elif arch.encoder_rope in ("bert_with_rope", "nomic_bert"):
        types = arch.type_vocab_size
        inv.dense.append(DenseTensors("embedding", padded_vocab(types) * h if types else 0, types * h))
        gte = arch.encoder_rope == "bert_with_rope"
        inv.tensors("small_tensors", 2 * h + arch.num_layers * (9 if gte else 4) * h, "replicated", tp)
        if arch.encoder_linear_bias and not gte:  # qkv and gate_up / up split, out_proj and down_proj not
            mlp = (2 if arch.gated_encoder_mlp else 1) * arch.intermediate_size
            inv.tensors("small_tensors", arch.num_layers * (3 * h + mlp), "column", tp)
            inv.tensors("small_tensors", arch.num_layers * 2 * h, "replicated", tp)
    else:
        inv.tensors("small_tensors", h, "replicated", tp)


def _embeddings(inv: Inventory, arch: ModelArchitecture, tp: int, *, pooling: bool, stage: Stage) -> None:
    h, vocab = arch.hidden_size, arch.vocab_size
    embedding, norm, lm_head = stage_holds(arch, stage)
    if embedding:
        inv.dense.append(DenseTensors("embedding", padded_vocab(vocab) * h // tp, vocab * h))
    if arch.encoder_only:
        _encoder_tensors(inv, arch, tp)
    if norm:
        inv.tensors("small_tensors", h, "replicated", tp)  # final norm
    if lm_head and not (arch.tie_word_embeddings or pooling or arch.encoder_only):
        head = ModuleRef("lm_head", kind="lm_head", class_name="ParallelLMHead")
        inv.linears.append(LinearShape(head, "lm_head", h, padded_vocab(vocab) // tp, h, vocab))


def vision_tensor_sizes(arch: ModelArchitecture, tp: int) -> list[int]:
    """The large tensors of a Qwen-VL style tower on one rank, in the order vLLM builds them (`vllm 0.22.0
    models/qwen3_vl.py::Qwen3_VisionTransformer.__init__`: patch embedding, merger, then the blocks' qkv,
    proj, linear_fc1 and linear_fc2), the geometry `hf_config.vision_parameters` counts; empty where the config
    does not state the tower's depth."""
    v = arch.vision
    if v is None or not v.depth or not v.hidden_size:
        return []
    h, element = v.hidden_size, arch.dtype_bytes
    inter = v.intermediate_size or 4 * h
    merger_in = h * v.spatial_merge_size**2
    sizes = [v.in_channels * v.temporal_patch_size * v.patch_size**2 * h * element]
    sizes += [merger_in * merger_in // tp * element, merger_in * v.out_hidden_size // tp * element]
    block = [3 * h * h // tp, h * h // tp, h * inter // tp, inter * h // tp]
    return sizes + [n * element for n in block] * v.depth


def module_inventory(
    arch: ModelArchitecture,
    *,
    tensor_parallel_size: int,
    pooling: bool,
    load_mtp: bool,
    stage: Stage | None = None,
) -> Inventory:
    """Every module vLLM allocates for `arch` on one of `tensor_parallel_size` ranks of `stage` (None: the
    whole model on one stage)."""
    tp = tensor_parallel_size
    stage = stage or Stage(0, 1, 0, arch.num_layers)
    inv = Inventory()
    _embeddings(inv, arch, tp, pooling=pooling, stage=stage)
    for index in range(stage.start, stage.end):
        _decoder_layer(inv, arch, index, tp)
    if load_mtp and arch.mtp_layers:
        mtp = mtp_inventory(arch, tp)
        inv.linears += mtp.linears
        inv.experts += mtp.experts
        inv.dense += mtp.dense
    if arch.vision_parameters:
        inv.tensors("vision", arch.vision_parameters, "column", tp)
    return inv
