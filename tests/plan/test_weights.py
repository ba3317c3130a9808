"""Weight bytes from geometry agree with the checkpoints' own safetensors totals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import GIB
from colo.catalog.architecture import ModelArchitecture
from colo.catalog.models import catalog_architecture, catalog_ids
from colo.plan.weights import estimate_weights

WITH_EXACT_BYTES = [m for m in catalog_ids() if catalog_architecture(m).checkpoint_bytes]


@pytest.mark.parametrize("model", WITH_EXACT_BYTES)
def test_geometry_estimate_matches_the_published_checkpoint_size(model: str) -> None:
    arch = catalog_architecture(model)
    assert arch.checkpoint_bytes is not None
    from_geometry = estimate_weights(replace(arch, checkpoint_bytes=None, checkpoint_bytes_by_part={}))
    # Rotary caches and vocabulary padding are the only on-GPU additions: well under 0.5 %.
    assert from_geometry.bytes == pytest.approx(arch.checkpoint_bytes, rel=0.005)


def _geometry_only(model: str) -> ModelArchitecture:
    return replace(catalog_architecture(model), checkpoint_bytes=None, checkpoint_bytes_by_part={})


def test_fp8_quantizes_linear_layers_but_keeps_embeddings_in_bf16() -> None:
    bf16 = estimate_weights(_geometry_only("Qwen/Qwen3-8B"))
    fp8 = estimate_weights(catalog_architecture("Qwen/Qwen3-8B-FP8"))
    assert fp8.detail["embedding"] == bf16.detail["embedding"]
    assert fp8.detail["mlp"] == pytest.approx(bf16.detail["mlp"] / 2, rel=0.01)
    assert 8 * GIB < fp8.bytes < 9.5 * GIB


def test_mtp_layers_load_only_with_mtp_speculation() -> None:
    arch = catalog_architecture("Qwen/Qwen3.6-27B")
    assert estimate_weights(arch, load_mtp=True).bytes > estimate_weights(arch).bytes


def test_embedding_servers_skip_an_untied_lm_head() -> None:
    geometry = _geometry_only("Qwen/Qwen3-8B")
    assert estimate_weights(geometry, pooling=True).detail["lm_head"] == 0
    assert estimate_weights(geometry).detail["lm_head"] > 0
    exact = catalog_architecture("Qwen/Qwen3-8B")
    skipped = estimate_weights(exact).bytes - estimate_weights(exact, pooling=True).bytes
    assert skipped == 151936 * 4096 * 2


def test_qwen36_27b_parameter_count_matches_its_checkpoint() -> None:
    # 27,781,427,952 parameters including the vision tower and one MTP layer (docs/sources/model-configs.yaml).
    params = estimate_weights(catalog_architecture("Qwen/Qwen3.6-27B"), load_mtp=True).parameters
    assert params == pytest.approx(27_781_427_952, rel=0.001)
