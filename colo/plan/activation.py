"""The activation peak vLLM's `profile_run` measures (`torch_peak_increase`).

The profile runs one dummy forward pass of `max_num_batched_tokens` tokens, then one sampler (or pooler)
pass for `min(max_num_seqs, tokens)` rows. The peak is whichever of the two holds more live tensors.
Attention kernels' own workspaces are not in the figure (vLLM skips attention metadata while profiling).
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog.architecture import ModelArchitecture


@dataclass(frozen=True)
class ActivationPeak:
    forward_bytes: int
    sampler_bytes: int

    @property
    def peak_bytes(self) -> int:
        return max(self.forward_bytes, self.sampler_bytes)


def _mlp_live_elements(arch: ModelArchitecture, tokens: int) -> int:
    """Elements alive inside one MLP: gate_up output (2I) and the activated half (I)."""
    if arch.moe is None:
        return tokens * 3 * arch.intermediate_size
    m = arch.moe
    routed = tokens * m.experts_per_token
    # fused_moe keeps three intermediate caches: (2I), (I) and (H) per routed token, plus router logits.
    experts = routed * (3 * m.moe_intermediate_size + arch.hidden_size)
    shared = tokens * 3 * m.shared_expert_intermediate_size
    dense = tokens * 3 * arch.intermediate_size if m.moe_layers < arch.num_layers else 0
    return max(experts + shared, dense) + tokens * m.num_experts * 2  # fp32 router logits = 2 elements


def _attention_live_elements(arch: ModelArchitecture, tokens: int) -> int:
    q = arch.num_attention_heads * (arch.global_head_dim or arch.head_dim)
    kv = 2 * (arch.global_num_kv_heads or arch.num_kv_heads) * (arch.global_head_dim or arch.head_dim)
    if arch.gdn is not None:
        g = arch.gdn
        q = max(q, 2 * g.num_key_heads * g.key_head_dim + 2 * g.num_value_heads * g.value_head_dim)
    return tokens * (2 * q + kv)


def activation_peak(
    arch: ModelArchitecture,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    pooling: bool,
    sampler_bytes_per_logit: int,
    num_speculative_tokens: int = 0,
) -> ActivationPeak:
    tokens = max_num_batched_tokens
    element = arch.dtype_bytes
    residual = 2 * tokens * arch.hidden_size  # hidden states and residual stream
    layer = max(_mlp_live_elements(arch, tokens), _attention_live_elements(arch, tokens))
    forward = (residual + layer) * element
    rows = min(max_num_seqs, tokens)
    if pooling or arch.encoder_only:
        sampler = rows * arch.hidden_size * 4 + tokens * arch.hidden_size * element
    else:
        # With speculative decoding the dummy run also exercises the rejection sampler on k draft positions
        # per row (`_dummy_sampler_run`); it runs after the plain sampler, so the peak is the larger of the two.
        logit_rows = rows * max(1, num_speculative_tokens)
        sampler = logit_rows * arch.vocab_size * sampler_bytes_per_logit + tokens * arch.hidden_size * element
    return ActivationPeak(forward, sampler)
