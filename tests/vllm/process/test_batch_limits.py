"""max_num_batched_tokens where the user leaves it to vLLM (`EngineArgs._set_default_args`), release by release."""

from __future__ import annotations

import pytest

from tests.vllm.helpers import process


@pytest.mark.parametrize(
    ("version", "tokens"),
    [
        ("0.10.0", 512),  # _set_default_args_v1: max_model_len without chunked prefill
        ("0.10.1", 512),
        ("0.11.0", 512),
        ("0.11.1", 2048),  # _set_default_args: max(max_model_len, the tier's 2048), then min(64 * 512, that)
        ("0.19.1", 2048),
        ("0.22.0", 2048),
        ("0.34.0", 2048),
    ],
)
def test_an_encoder_only_embedders_default_batch_follows_each_release(version: str, tokens: int) -> None:
    limits = process("BAAI/bge-m3", "L40S", version, max_model_len=512, max_num_seqs=64).limits
    assert not limits.chunked_prefill
    assert limits.max_num_batched_tokens == tokens


def _tokens(model: str, version: str, **limits: int) -> int:
    return process(model, "L40S", version, max_model_len=512, **limits).limits.max_num_batched_tokens


def test_from_0111_a_default_batch_is_at_most_max_num_seqs_whole_inputs() -> None:
    """min(max_num_seqs * max_model_len, max_num_batched_tokens), chunked or not, only where the user gave none."""
    assert _tokens("Qwen/Qwen3-8B", "0.11.0", max_num_seqs=2) == 2048
    assert _tokens("Qwen/Qwen3-8B", "0.11.1", max_num_seqs=2) == 1024
    assert _tokens("BAAI/bge-m3", "0.22.0", max_num_seqs=2) == 1024
    assert _tokens("Qwen/Qwen3-8B", "0.22.0", max_num_seqs=2, max_num_batched_tokens=4096) == 4096


def test_up_to_0100_vllm_replaces_a_given_batch_without_chunked_prefill() -> None:
    """0.9.2-0.10.0 `_set_default_args_v1`: `if not self.enable_chunked_prefill: max_num_batched_tokens =
    max_model_len`, whatever the user gave; 0.10.1 keeps the user's value."""
    old = process("BAAI/bge-m3", "L40S", "0.10.0", max_model_len=1024, max_num_batched_tokens=512).limits
    assert (old.max_num_batched_tokens, old.batched_tokens_given) == (1024, False)
    new = process("BAAI/bge-m3", "L40S", "0.10.1", max_model_len=1024, max_num_batched_tokens=512).limits
    assert (new.max_num_batched_tokens, new.batched_tokens_given) == (512, True)
