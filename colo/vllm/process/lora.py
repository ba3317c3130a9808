"""LoRA slots: the GPU tensors vLLM allocates for adapters when a server runs with `--enable-lora`.

Read in vllm 0.33.0. `GPUModelRunner.load_model` wraps the model in LoRA layers inside its
`DeviceMemoryProfiler` (v1/worker/lora_model_runner_mixin.py::load_lora_model), so the slots are part of
"Model loading took": they belong to the weights figure. Every module vLLM supports LoRA on is wrapped
(lora/utils.py::get_supported_lora_modules: every LinearBase and fused-MoE layer, plus the model class's
`embedding_modules`), and each wrapper allocates `max_loras` slots of `max_lora_rank` in `lora_dtype`
("auto" is the model dtype, config/lora.py::LoRAConfig):

- a linear of S fused slices, K inputs and N outputs on the rank (lora/layers/base_linear.py::
  BaseLinearLayerWithLoRA.create_lora_weights; column- and row-parallel alike, K and N as the rank holds
  them): S x [max_loras, 1, rank, K] for A and [max_loras, 1, N_slice, rank] for B, so
  max_loras x rank x (S x K + N);
- a fused-MoE layer of E experts, hidden H and intermediate I on the rank (lora/layers/fused_moe.py::
  FusedMoEWithLoRA._create_lora_a_weights / _create_lora_b_weights, gated: two w13 slices):
  max_loras x E x rank x (2H + 2I) for w13 and max_loras x E x rank x (I + H) for w2; its router and a
  shared expert's gate are ReplicatedLinear layers, wrapped like any linear;
- with `embed_tokens` among the class's embedding_modules, the input embedding (lora/layers/
  vocab_parallel_embedding.py): max_loras x rank x (vocab + H); with `lm_head`, the logits processor
  (lora/layers/logits_processor.py, which refuses a vocabulary above 258048): max_loras x rank x (H + vocab).
  In 0.33 LlamaForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, MixtralForCausalLM and the Granite,
  Exaone, Nemotron and Lfm2 families declare both (and their subclasses inherit them).

Not counted, and why: the dummy adapters vLLM profiles with are built on the CPU
(lora/model_manager.py::create_dummy_lora, device "cpu"); Punica's index tensors are a few int tensors of
max_num_batched_tokens (well under 1 MiB at 8192 tokens). Not covered here: the profile run's LoRA
intermediates (an fp32 [slices, tokens, rank] buffer per layer, transient) and the second set of CUDA graphs
vLLM captures with LoRA active; both belong to the activation and graph rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.process.weight_modules import module_inventory

MAX_LORA_VOCAB = 258048  # LogitsProcessorWithLoRA.create_lora_weights refuses a larger vocabulary
TEXT_PARTS = (
    "attention",
    "mlp",
    "experts",
)  # the language model's layers (not the vision tower, the MTP drafter)


@dataclass(frozen=True)
class LoraSlots:
    """What `--enable-lora` asks for: vLLM's LoRAConfig fields of the same names."""

    max_loras: int = 1
    max_lora_rank: int = 16
    dtype_bytes: int = 2  # lora_dtype; "auto" is the model dtype
    wraps_embeddings: bool = False  # the model class lists embed_tokens and lm_head in embedding_modules


class LoraRefused(ValueError):
    """vLLM refuses LoRA for this model; the message is vLLM's."""


def lora_slot_bytes(arch: ModelArchitecture, slots: LoraSlots, *, tensor_parallel_size: int = 1) -> int:
    """Bytes of LoRA slots on one rank, which "Model loading took" includes (add them to the weights).

    Raises LoraRefused where vLLM refuses the model's vocabulary for LoRA."""
    inv = module_inventory(arch, tensor_parallel_size=tensor_parallel_size, pooling=False, load_mtp=False)
    per_rank_elements = 0
    for linear in inv.linears:
        if linear.part not in TEXT_PARTS:
            continue
        slices = max(1, len(linear.module.shards))
        per_rank_elements += slices * linear.k + linear.n
    shared_gate = bool(arch.moe and arch.moe.shared_expert_intermediate_size)
    for stack in inv.experts:
        if stack.part not in TEXT_PARTS:
            continue
        per_rank_elements += stack.experts * (3 * stack.hidden + 3 * stack.inter)
        # the router (mlp.gate, a ReplicatedLinear H -> E) and a shared expert's gate (H -> 1) are linears too
        per_rank_elements += stack.hidden + stack.experts + ((stack.hidden + 1) if shared_gate else 0)
    if slots.wraps_embeddings:
        if arch.vocab_size > MAX_LORA_VOCAB:
            raise LoraRefused(
                f"ValueError: When using LoRA, vocab size must be <= {MAX_LORA_VOCAB} (this model's is {arch.vocab_size})"
            )
        per_rank_elements += 2 * (arch.vocab_size + arch.hidden_size)
    return slots.max_loras * slots.max_lora_rank * per_rank_elements * slots.dtype_bytes
