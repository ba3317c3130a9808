"""The multimodal encoder's share of the profile (colo.vllm.process.mm_profile): the dummy items each processor
makes, how many the release encodes at once, the tower's transient peak and what stays alive after it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import GIB, MIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.activation import ActivationPeak
from colo.vllm.process.mm_profile import encoder_profile, max_size_items, profiled_batch
from colo.vllm.rules import releases, rules_for

QWEN36 = "Qwen/Qwen3.6-27B-FP8"
GEMMA3 = "google/gemma-3-27b-it"


def test_a_qwen3_vl_image_is_16384_tokens_and_its_video_two_frames_of_the_video_processors_pixels() -> None:
    items = max_size_items(catalog_architecture(QWEN36), max_model_len=32768)
    # 16,777,216 pixels of 32 x 32 units: 128 x 128 units, four 16-pixel patches each, one temporal patch
    assert (items["image"].tokens, items["image"].patches) == (16384, 65536)
    assert items["image"].pixel_values == 65536 * 3 * 2 * 16 * 16
    # 25,165,824 / 2 pixels per frame: 12,288 units over one frame pair
    assert (items["video"].tokens, items["video"].patches) == (12288, 49152)


def test_the_image_is_profiled_once_when_it_fills_the_encoder_budget() -> None:
    arch = catalog_architecture(QWEN36)
    batch = profiled_batch(
        arch, max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=1024, mm_limits={}
    )
    assert batch is not None
    item, count = batch
    assert (item.modality, count) == ("image", 1)  # budget max(8192, 16384) holds one 16384-token image


def test_video_is_profiled_when_images_are_not_allowed() -> None:
    arch = catalog_architecture(QWEN36)
    batch = profiled_batch(
        arch, max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=1024, mm_limits={"image": 0}
    )
    assert batch is not None and (batch[0].modality, batch[1]) == ("video", 1)


def test_a_small_fixed_size_image_is_profiled_as_many_times_as_the_budget_holds() -> None:
    """Gemma 3: 256 tokens an image, so 8192 batched tokens profile 32 images at once (2048: 8)."""
    arch = catalog_architecture(GEMMA3)
    for mnbt, expected in ((8192, 32), (2048, 8)):
        batch = profiled_batch(
            arch, max_model_len=8192, max_num_batched_tokens=mnbt, max_num_seqs=1024, mm_limits={}
        )
        assert batch is not None and (batch[0].tokens, batch[0].patches, batch[1]) == (256, 4096, expected)


def test_the_prompt_limit_and_the_sequences_cap_the_items() -> None:
    arch = catalog_architecture(GEMMA3)
    limited = profiled_batch(
        arch, max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=4, mm_limits={"image": 2}
    )
    assert limited is not None and limited[1] == 8  # 4 requests x 2 images a prompt


def test_the_towers_peak_is_its_widest_block_over_every_patch_beside_the_pixels() -> None:
    arch = catalog_architecture(QWEN36)
    profile = encoder_profile(arch, max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=1024)
    h, i = 1152, 4304
    # attention 3H + 8H (the wider block at TP1), the position embeddings H, rotary 72 + 8, pixels 1536
    per_patch = max(3 * h + 8 * h, 2 * h + 2 * i) + h + (h // 16 + 8) + 1536
    assert profile.peak_bytes == 65536 * per_patch * 2
    assert profile.kept_bytes == 65536 * 1536 * 2 + 16384 * 5120 * 2
    assert profile.peak_bytes > 1.8 * GIB  # nearly twice the text forward (0.98 GiB at 8192 tokens)


def test_tensor_parallel_ranks_hold_their_share_of_the_towers_projections() -> None:
    arch = catalog_architecture(QWEN36)
    one, two = (
        encoder_profile(
            arch, max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=2, tensor_parallel_size=tp
        )
        for tp in (1, 2)
    )
    assert two.peak_bytes < one.peak_bytes and two.kept_bytes == one.kept_bytes


def test_releases_before_022_keep_one_item_the_budget_rule_from_022() -> None:
    by_first = {r.first: r.mm_profile_batch for r in releases()}
    assert by_first["0.21.0"] == "one_item" and by_first["0.22.0"] == "encoder_budget"
    arch = catalog_architecture(GEMMA3)
    kwargs = {"max_model_len": 8192, "max_num_batched_tokens": 8192, "max_num_seqs": 1024}
    budget = encoder_profile(arch, **kwargs, items_rule=rules_for("0.22.0").mm_profile_batch)
    one = encoder_profile(arch, **kwargs, items_rule=rules_for("0.21.0").mm_profile_batch)
    assert (budget.items, one.items) == (32, 1)
    assert budget.peak_bytes == 32 * one.peak_bytes


def test_a_tower_colo_does_not_size_says_so_and_one_without_a_tower_has_nothing() -> None:
    gemma4 = encoder_profile(
        catalog_architecture("google/gemma-4-31B-it"),
        max_model_len=8192,
        max_num_batched_tokens=8192,
        max_num_seqs=64,
    )
    assert not gemma4.sized and gemma4.peak_bytes == 0
    text = encoder_profile(
        catalog_architecture("Qwen/Qwen3-8B"),
        max_model_len=8192,
        max_num_batched_tokens=8192,
        max_num_seqs=64,
    )
    assert text.sized and text.items == 0


def test_the_profile_peak_is_the_encoder_or_the_text_pass_with_what_the_encoder_left() -> None:
    text = ActivationPeak(forward_bytes=900 * MIB, sampler_bytes=600 * MIB, mm_kept_bytes=300 * MIB)
    assert text.peak_bytes == 1200 * MIB
    assert replace(text, mm_encoder_bytes=2000 * MIB).peak_bytes == 2000 * MIB
    assert replace(text, mm_encoder_bytes=1000 * MIB).peak_bytes == 1200 * MIB


@pytest.mark.parametrize("max_pixels", [1003520, 12845056])
def test_a_checkpoints_max_pixels_replaces_the_processor_default(max_pixels: int) -> None:
    arch = catalog_architecture(QWEN36)
    assert arch.vision is not None
    smaller = replace(arch, vision=replace(arch.vision, max_pixels=max_pixels))
    image = max_size_items(smaller, max_model_len=32768)["image"]
    assert image.tokens <= max_pixels // (32 * 32) and image.tokens > 0.98 * max_pixels // (32 * 32)


def test_the_video_processors_pixels_are_read_from_its_own_file() -> None:
    from colo.vllm.checkpoint.hf_config import video_max_pixels

    side = {"video_preprocessor_config.json": {"size": {"longest_edge": 8388608, "shortest_edge": 4096}}}
    assert video_max_pixels(side) == 8388608
    assert video_max_pixels({}) is None and video_max_pixels(None) is None
