"""The batch limits vLLM's scheduler config accepts (`SchedulerConfig.verify_max_model_len`, vllm 0.11.1-0.34.0
config/scheduler.py), and max_num_batched_tokens where the user leaves it to vLLM (`EngineArgs._set_default_args`),
release by release."""

from __future__ import annotations

import pytest

from colo.catalog import gpu
from colo.vllm import EstimateRefused, EstimateRequest, catalog_architecture, estimate
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.process.engine_limits import EngineLimits, resolve_limits
from colo.vllm.process.mm_profile import prefix_lm_item_tokens
from colo.vllm.process.refusals import batch_limits_refusal
from colo.vllm.rules import rules_for
from tests.vllm.helpers import process


def test_limits_vllm_accepts_are_not_refused() -> None:
    assert batch_limits_refusal(EngineLimits(8192, 256, 2048)) is None  # chunked: a batch may be shorter
    assert batch_limits_refusal(EngineLimits(512, 64, 512, chunked_prefill=False)) is None
    assert (
        batch_limits_refusal(EngineLimits(512, 512, 512, batched_tokens_given=True)) is None
    )  # equal is fine


def test_a_given_batch_below_max_num_seqs_is_refused_at_max_num_batched_tokens() -> None:
    refusal = batch_limits_refusal(EngineLimits(8192, 64, 32, batched_tokens_given=True))
    assert refusal is not None
    assert refusal.key == "maxNumBatchedTokens"
    assert refusal.message == (
        "ValueError: max_num_batched_tokens (32) must be greater than or equal to max_num_seqs (64). "
        "[fix: maxNumBatchedTokens at least 64, or maxNumSeqs at most 32]"
    )


def test_max_num_seqs_above_vllms_own_batch_is_refused_at_max_num_seqs() -> None:
    refusal = batch_limits_refusal(EngineLimits(8192, 4096, 2048))
    assert refusal is not None
    assert refusal.key == "maxNumSeqs"
    assert (
        "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096)"
        in refusal.message
    )
    assert "[fix: maxNumSeqs at most 2048" in refusal.message


def test_without_chunked_prefill_a_batch_must_hold_a_whole_input() -> None:
    refusal = batch_limits_refusal(
        EngineLimits(1024, 64, 512, chunked_prefill=False, batched_tokens_given=True)
    )
    assert refusal is not None
    assert refusal.key == "maxNumBatchedTokens"
    assert refusal.message.startswith(
        "ValueError: max_num_batched_tokens (512) is smaller than max_model_len (1024). This effectively limits "
        "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences."
    )
    assert (
        "[fix: maxNumBatchedTokens at least 1024, or maxModelLen at most 512: the model does not chunk"
        in (refusal.message)
    )
    # vLLM raises the length check first; the fix given passes the sequence check too
    both = batch_limits_refusal(
        EngineLimits(1024, 2048, 512, chunked_prefill=False, batched_tokens_given=True)
    )
    assert both is not None and "is smaller than max_model_len" in both.message
    assert "maxNumBatchedTokens at least 2048: " in both.message and "maxModelLen at most" not in both.message


@pytest.mark.parametrize("version", ["0.9.2", "0.10.1", "0.11.0", "0.11.1", "0.19.1", "0.22.0", "0.34.0"])
@pytest.mark.parametrize(
    ("model", "length"), [("BAAI/bge-m3", 512), ("Qwen/Qwen3-8B", 1024), ("Qwen/Qwen3-8B", None)]
)
def test_limits_left_to_vllm_are_never_refused(version: str, model: str, length: int | None) -> None:
    limits = process(model, "L40S", version, max_model_len=length).limits
    assert batch_limits_refusal(limits) is None


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
    assert batch_limits_refusal(old) is None
    refusal = batch_limits_refusal(new)
    assert refusal is not None and refusal.key == "maxNumBatchedTokens"


def test_a_given_batch_equal_to_the_default_or_replaced_by_vllm_runs_as_unset() -> None:
    """The limits keep the batch vLLM sets unset beside the one it runs, so a plan can tell a flag that changes
    the engine from one that does not."""
    unset = process("Qwen/Qwen3-8B", "L40S", "0.22.0", max_model_len=512).limits
    assert unset.batched_tokens_as_unset
    default = unset.max_num_batched_tokens
    same = process("Qwen/Qwen3-8B", "L40S", "0.22.0", max_model_len=512, max_num_batched_tokens=default)
    assert same.limits.batched_tokens_given and same.limits.batched_tokens_as_unset
    other = process("Qwen/Qwen3-8B", "L40S", "0.22.0", max_model_len=512, max_num_batched_tokens=default // 2)
    assert not other.limits.batched_tokens_as_unset
    replaced = process("BAAI/bge-m3", "L40S", "0.10.0", max_model_len=1024, max_num_batched_tokens=512).limits
    assert replaced.batched_tokens_as_unset


def _request(**fields: object) -> EstimateRequest:
    return EstimateRequest(model="Qwen/Qwen3-8B", vllm_version="0.22.0", gpu="L40S", **fields)  # type: ignore[arg-type]


def test_estimate_refuses_a_batch_below_max_num_seqs_naming_the_argument() -> None:
    with pytest.raises(EstimateRefused) as refused:
        estimate(_request(max_num_seqs=64, max_num_batched_tokens=32))
    assert refused.value.field == "max_num_batched_tokens"
    assert (
        "max_num_batched_tokens (32) must be greater than or equal to max_num_seqs (64)"
        in refused.value.message
    )


def test_estimate_refuses_max_num_seqs_above_the_default_batch_naming_max_num_seqs() -> None:
    with pytest.raises(EstimateRefused) as refused:
        estimate(_request(max_num_seqs=4096))
    assert refused.value.field == "max_num_seqs"


def test_estimate_refuses_an_encoder_batch_shorter_than_its_inputs() -> None:
    request = EstimateRequest(
        model="BAAI/bge-m3",
        vllm_version="0.22.0",
        gpu="L40S",
        pooling=True,
        max_model_len=1024,
        max_num_batched_tokens=512,
    )
    with pytest.raises(EstimateRefused) as refused:
        estimate(request)
    assert refused.value.field == "max_num_batched_tokens"
    assert "is smaller than max_model_len (1024)" in refused.value.message
    assert estimate(_request(max_num_seqs=64, max_num_batched_tokens=64)).budget is not None


GEMMA4 = "google/gemma-4-31B-it-FP8"


def _gemma4_batch(version: str, gpu: str, **kwargs: object) -> int:
    kwargs = {"max_model_len": 16384, **kwargs}
    request = EstimateRequest(model=GEMMA4, gpu=gpu, vllm_version=version, **kwargs)  # type: ignore[arg-type]
    return estimate(request).budget.spec.limits.max_num_batched_tokens


def test_from_0220_gemma4s_default_batch_is_raised_to_one_video() -> None:
    # vllm 0.22.0 engine/arg_utils.py::_get_min_mm_batched_tokens: Gemma 4's largest item is a video of
    # 32 x (70 + 2 + 6) tokens, over the 2048 default below 70 GiB (and on an A100)
    assert _gemma4_batch("0.22.0", "L40S") == 2496
    assert _gemma4_batch("0.34.0", "A100-80GB") == 2496
    assert _gemma4_batch("0.21.0", "L40S") == 2048  # a release before the rule
    assert _gemma4_batch("0.20.2", "L40S") == 2048


def test_gemma4s_batch_is_not_raised_over_a_larger_default_or_a_given_value() -> None:
    assert _gemma4_batch("0.34.0", "H100-SXM") == 8192
    assert _gemma4_batch("0.34.0", "L40S", max_num_batched_tokens=2048) == 2048
    assert _gemma4_batch("0.34.0", "L40S", max_num_seqs=1, max_model_len=2048) == 2048  # 1 x 2048 caps it


def test_from_0270_a_gemma4_without_multimodal_inputs_is_no_prefix_lm() -> None:
    # config/model.py::_supports_multimodal_for_mm_prefix (0.27.0): text-only, no floor; 0.26.0 still raises
    assert _gemma4_batch("0.27.0", "L40S", language_model_only=True) == 2048
    assert _gemma4_batch("0.27.0", "L40S", limit_mm_per_prompt={"image": 0, "video": 0}) == 2048
    assert _gemma4_batch("0.27.0", "L40S", limit_mm_per_prompt={"image": 0}) == 2496
    assert _gemma4_batch("0.26.0", "L40S", language_model_only=True) == 2496


# A Hub-style config.json shaped like Gemma 4 E2B's: a vision and an audio tower beside the text model. The audio
# block has transformers' Gemma4AudioConfig defaults (the E2B/E4B tower: 12 conformer layers, 1024 wide); the
# text sizes are E2B-like, and only the towers and use_bidirectional_attention matter to the batch floor.
GEMMA4_WITH_AUDIO: dict[str, object] = {
    "architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4",
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "gemma4_text",
        "hidden_size": 1536,
        "intermediate_size": 6144,
        "num_hidden_layers": 35,
        "num_attention_heads": 8,
        "num_key_value_heads": 1,
        "head_dim": 256,
        "global_head_dim": 512,
        "sliding_window": 512,
        "max_position_embeddings": 131072,
        "vocab_size": 262144,
        "dtype": "bfloat16",
        "use_bidirectional_attention": "vision",
    },
    "vision_config": {
        "model_type": "gemma4_vision",
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 16,
        "num_attention_heads": 12,
        "patch_size": 16,
        "default_output_length": 280,
    },
    "audio_config": {
        "model_type": "gemma4_audio",
        "hidden_size": 1024,
        "num_hidden_layers": 12,
        "num_attention_heads": 8,
        "output_proj_dims": 1536,
        "subsampling_conv_channels": [128, 32],
        "conv_kernel_size": 5,
    },
}


def _gemma4_floor(arch: ModelArchitecture, version: str, **limits: int) -> int:
    return resolve_limits(
        arch,
        gpu("L40S"),
        rules_for(version),
        max_model_len=16384,
        max_num_seqs=None,
        max_num_batched_tokens=None,
        mm_limits=limits,
    ).max_num_batched_tokens


def test_a_gemma4_with_an_audio_tower_counts_audio_among_the_items_vllm_reports() -> None:
    """vllm 0.22.0 and 0.34.0 models/gemma4_mm.py::get_mm_max_tokens_per_item: audio's
    processor.audio_seq_length (750) where the config has an audio_config; a video (2496) still costs most."""
    arch = from_hf_config(GEMMA4_WITH_AUDIO, "acme/gemma-4-e2b-like")
    assert arch.audio_tower and arch.mm_prefix_lm
    assert prefix_lm_item_tokens(arch) == {"image": 280, "audio": 750, "video": 2496}
    without = from_hf_config({**GEMMA4_WITH_AUDIO, "audio_config": None}, "acme/gemma-4-no-audio")
    assert not without.audio_tower
    assert prefix_lm_item_tokens(without) == {"image": 280, "video": 2496}
    shipped = catalog_architecture(GEMMA4)  # 31B: no audio tower, so its figures stay
    assert not shipped.audio_tower and prefix_lm_item_tokens(shipped) == {"image": 280, "video": 2496}
    assert _gemma4_floor(arch, "0.22.0") == _gemma4_floor(shipped, "0.22.0") == 2496


def test_from_0270_a_gemma4_with_an_audio_tower_keeps_its_floor_while_audio_is_allowed() -> None:
    """0.27.0 multimodal/registry.py::supports_multimodal_inputs asks every modality the processor supports,
    audio included, and the floor is still the largest item vLLM reports (the video's), whatever the limits."""
    arch = from_hf_config(GEMMA4_WITH_AUDIO, "acme/gemma-4-e2b-like")
    assert _gemma4_floor(arch, "0.27.0", image=0, video=0) == 2496
    assert _gemma4_floor(arch, "0.34.0", image=0, video=0) == 2496
    assert _gemma4_floor(arch, "0.27.0", image=0, video=0, audio=0) == 2048
    assert _gemma4_floor(catalog_architecture(GEMMA4), "0.27.0", image=0, video=0) == 2048
