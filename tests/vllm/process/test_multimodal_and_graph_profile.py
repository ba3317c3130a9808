"""Vision towers, their profiling pass, and the temporary KV cache of the graph estimate (docs §14)."""

from __future__ import annotations

import pytest

from colo.catalog import GIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.activation import encoder_profile_kept_bytes
from colo.vllm.process.budget import graph_profile_blocks, graph_profile_kv_bytes
from colo.vllm.process.refusals import ServerSettings, missing_flag_refusals
from colo.vllm.rules import rules_for
from tests.vllm.helpers import process, sized

MOE = "Qwen/Qwen3.6-35B-A3B-FP8"
TEXT_ONLY_LIMITS = (("image", 0), ("video", 0))


def test_language_model_only_drops_the_vision_weights_and_the_encoder_profile() -> None:
    full = sized(MOE, "L40S", "0.20.0", max_model_len=32768, kv_cache_dtype="fp8")
    text = sized(MOE, "L40S", "0.20.0", max_model_len=32768, kv_cache_dtype="fp8", language_model_only=True)
    assert full.spec.vision_tower_built and full.spec.mm_encoder_profiled
    assert not text.spec.vision_tower_built and not text.spec.mm_encoder_profiled
    assert full.weights_bytes - text.weights_bytes == pytest.approx(0.83 * GIB, rel=0.05)
    # without the tower the profile is the text pass alone: what a built tower whose profiling is skipped gives
    skipped = sized(MOE, "L40S", "0.20.0", max_model_len=32768, kv_cache_dtype="fp8", skip_mm_profiling=True)
    assert text.activation_bytes == skipped.activation_bytes < full.activation_bytes


@pytest.mark.parametrize(("version", "built"), [("0.14.1", True), ("0.16.0", False)])
def test_zero_limits_for_every_tower_modality_leave_it_unbuilt_from_016(version: str, built: bool) -> None:
    spec = process(MOE, "H100-SXM", version, max_model_len=32768, mm_limits=TEXT_ONLY_LIMITS)
    assert spec.vision_tower_built is built
    assert not spec.mm_encoder_profiled  # no image allowed: nothing to profile in any release
    images_only = process(MOE, "H100-SXM", version, max_model_len=32768, mm_limits=(("video", 0),))
    assert images_only.vision_tower_built and images_only.mm_encoder_profiled


def test_skipping_the_encoder_profile_keeps_the_tower_and_its_weights() -> None:
    spec = process(MOE, "L40S", "0.20.0", max_model_len=32768, skip_mm_profiling=True)
    assert spec.vision_tower_built and not spec.mm_encoder_profiled


def test_the_profiled_image_keeps_its_pixels_and_outputs_alive() -> None:
    # 16384 merged tokens x 4 patches of 3 x 2 x 16 x 16 values in bf16, and 16384 x 2048 outputs
    kept = encoder_profile_kept_bytes(catalog_architecture(MOE))
    assert kept == 65536 * 1536 * 2 + 16384 * 2048 * 2
    assert encoder_profile_kept_bytes(catalog_architecture("Qwen/Qwen3-8B")) == 0


@pytest.mark.parametrize(
    ("version", "language_model_only", "skip", "keys"),
    [
        ("0.16.0", True, False, ["languageModelOnly"]),
        ("0.17.0", True, False, []),
        ("0.10.0", False, True, ["skipMmProfiling"]),
        ("0.10.1", False, True, []),
    ],
)
def test_flags_the_release_does_not_know_are_refused(
    version: str, language_model_only: bool, skip: bool, keys: list[str]
) -> None:
    settings = ServerSettings(
        version=version, pooling=False, language_model_only=language_model_only, skip_mm_profiling=skip
    )
    assert [r.key for r in missing_flag_refusals(rules_for(version), settings)] == keys


@pytest.mark.parametrize(
    ("version", "blocks"), [("0.17.1", 0), ("0.18.0", 512), ("0.25.1", 512), ("0.26.0", 256)]
)
def test_the_graph_estimate_builds_a_temporary_kv_cache_from_018(version: str, blocks: int) -> None:
    spec = process("Qwen/Qwen3-30B-A3B-FP8", "L40S", version, max_model_len=32768)  # MoE: V1 runner to 0.28
    assert spec.limits.max_num_seqs == 256
    assert graph_profile_blocks(spec) == blocks


def test_eager_runs_and_the_v2_runners_stub_build_no_temporary_cache() -> None:
    assert graph_profile_blocks(process("Qwen/Qwen3-8B", "L40S", "0.20.0", enforce_eager=True)) == 0
    assert graph_profile_blocks(process("Qwen/Qwen3-8B", "L40S", "0.22.0")) == 0  # V2 runner, estimate stub


def test_the_reports_moe_pair_cannot_profile_default_graphs_after_its_weights() -> None:
    # Failure 6 of the field report: 512 blocks x 11 layer slots x 2,162,688 bytes = 11.3 GiB after 34.9 GiB.
    spec = process(
        MOE,
        "L40S",
        "0.20.0",
        max_model_len=32768,
        kv_cache_dtype="fp8",
        num_speculative_tokens=1,
        speculative_method="mtp",
        gpu_memory_utilization=0.87,
    )
    assert graph_profile_kv_bytes(spec) == 512 * 23_789_568
