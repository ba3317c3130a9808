"""A pooling decoder that vLLM builds with bidirectional attention has no KV pool, release by release.

A decoder class that reads its config's `is_causal` builds every attention layer ENCODER_ONLY where the flag is
false (vllm 0.22.0 model_executor/models/llama.py::LlamaDecoderLayer.__init__, qwen2.py, qwen3.py, gemma3.py),
and an ENCODER_ONLY layer gives no KV cache spec: no pool is allocated (v1/engine/core.py::EngineCore.
_initialize_kv_caches). 0.9.2 - 0.10.0 cannot build such a layer (FlashAttentionImpl), and 0.11.1 - 0.15.x cannot
size qwen3.py's (attention/layer.py::Attention.get_kv_cache_spec asserts a DECODER layer). A class that does not
read the flag keeps its pool; so does a causal model, whatever its class pools by default.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from colo.catalog.models import catalog_ids
from colo.vllm import EstimateRefused, EstimateRequest, catalog_architecture, estimate
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.process.attention_type import bidirectional, without_kv_cache
from colo.vllm.process.engine_limits import chunks_prefill
from colo.vllm.process.kv_cache import kv_geometry
from colo.vllm.rules import BidirectionalAttention, releases, rules_for
from tests.vllm.helpers import QWEN3_SMALL_DECODER

DECODER = QWEN3_SMALL_DECODER
# An EmbeddingGemma-shaped Gemma 3 text encoder (the keys colo reads; not any one checkpoint's exact values)
GEMMA3_TEXT = {
    "architectures": ["Gemma3TextModel"],
    "model_type": "gemma3_text",
    "num_hidden_layers": 24,
    "num_attention_heads": 3,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "hidden_size": 768,
    "intermediate_size": 1152,
    "vocab_size": 262144,
    "max_position_embeddings": 2048,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16",
}
NO_KV_RELEASES = ("0.10.1", "0.11.0", "0.16.0", "0.22.0", "0.34.0")


def _model(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    root = tmp_path / name
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    return str(root)


def _decoder(tmp_path: Path, architecture: str, **keys: Any) -> str:
    name = f"{architecture}-{len(list(tmp_path.iterdir()))}"
    return _model(tmp_path, name, {**DECODER, "architectures": [architecture], **keys})


def _estimate(model: str, version: str, *, pooling: bool = True):  # type: ignore[no-untyped-def]
    return estimate(EstimateRequest(model=model, vllm_version=version, gpu="L40S", pooling=pooling))


@pytest.mark.parametrize("version", NO_KV_RELEASES)
def test_a_non_causal_qwen3_embedder_has_no_kv_pool(tmp_path: Path, version: str) -> None:
    bidirectional_model = _estimate(_decoder(tmp_path, "Qwen3ForCausalLM", is_causal=False), version)
    causal = _estimate(_decoder(tmp_path, "Qwen3ForCausalLM"), version)
    assert bidirectional_model.budget.capacity is None
    assert causal.budget.capacity is not None
    # the same weights and forward pass; only the pool (and what util reserved for it) is gone
    assert bidirectional_model.budget.weights_bytes == causal.budget.weights_bytes
    assert bidirectional_model.budget.footprint_bytes < causal.budget.footprint_bytes / 4


@pytest.mark.parametrize("version", ("0.11.2", "0.12.0", "0.13.0", "0.14.1", "0.15.0"))
def test_vllm_0_11_1_to_0_15_cannot_start_a_non_causal_qwen3(tmp_path: Path, version: str) -> None:
    with pytest.raises(EstimateRefused) as refused:
        _estimate(_decoder(tmp_path, "Qwen3ForCausalLM", is_causal=False), version)
    assert refused.value.field == "vllm_version"
    message = refused.value.message
    assert f"vLLM {version} cannot start Qwen3ForCausalLM with bidirectional attention" in message
    assert "its config.json sets is_causal: false" in message
    assert "Attention.get_kv_cache_spec raises AssertionError" in message
    assert "(0.10.1 to 0.11.0, 0.16.0 to 0.34.0)" in message


@pytest.mark.parametrize("architecture", ["LlamaForCausalLM", "Qwen2Model", "Qwen3ForCausalLM"])
@pytest.mark.parametrize("version", ("0.9.2", "0.10.0"))
def test_vllm_0_9_2_and_0_10_0_cannot_build_bidirectional_attention(
    tmp_path: Path, architecture: str, version: str
) -> None:
    with pytest.raises(EstimateRefused) as refused:
        _estimate(_decoder(tmp_path, architecture, is_causal=False), version)
    assert "FlashAttentionImpl.__init__ raises NotImplementedError" in refused.value.message
    assert _estimate(_decoder(tmp_path, architecture), version).budget.capacity is not None


@pytest.mark.parametrize("architecture", ["LlamaForCausalLM", "LlamaModel", "MistralModel", "Qwen2Model"])
@pytest.mark.parametrize("version", ("0.10.1", "0.11.2", "0.12.0", "0.14.1", "0.22.0", "0.34.0"))
def test_llama_and_qwen2_decoders_go_without_a_kv_pool_from_0_10_1(
    tmp_path: Path, architecture: str, version: str
) -> None:
    assert _estimate(_decoder(tmp_path, architecture, is_causal=False), version).budget.capacity is None


@pytest.mark.parametrize("version", ("0.11.0", "0.12.0", "0.22.0", "0.34.0"))
def test_a_causal_embedder_keeps_its_kv_pool(tmp_path: Path, version: str) -> None:
    """The flag absent or true changes nothing: the same figures either way."""
    absent = _estimate(_decoder(tmp_path, "Qwen3ForCausalLM"), version).budget
    stated = _estimate(_decoder(tmp_path, "Qwen3ForCausalLM", is_causal=True), version).budget
    assert absent.capacity is not None
    assert (absent.capacity, absent.footprint_bytes) == (stated.capacity, stated.footprint_bytes)


def test_gemma3_text_model_takes_use_bidirectional_attention(tmp_path: Path) -> None:
    """Gemma3TextModelConfig writes is_causal = not use_bidirectional_attention (0.10.2+, when it is registered)."""
    encoder = _model(tmp_path, "embedding-gemma", {**GEMMA3_TEXT, "use_bidirectional_attention": True})
    decoder = _model(tmp_path, "causal-gemma", {**GEMMA3_TEXT, "use_bidirectional_attention": False})
    # the handler overwrites is_causal: the flag alone changes nothing for this class
    flag_only = _model(tmp_path, "flag-only", {**GEMMA3_TEXT, "is_causal": False})
    assert not architecture_from_path(Path(encoder), "e").is_causal
    assert architecture_from_path(Path(flag_only), "f").is_causal
    for version in ("0.11.0", "0.12.0", "0.22.0", "0.34.0"):
        assert _estimate(encoder, version).budget.capacity is None
        assert _estimate(decoder, version).budget.capacity is not None
        assert _estimate(flag_only, version).budget.capacity is not None


def test_a_class_that_does_not_read_the_flag_keeps_its_kv_pool(tmp_path: Path) -> None:
    """gemma3.py reads is_causal from 0.10.2 only; Gemma 2's class never does."""
    gemma3 = _decoder(tmp_path, "Gemma3ForCausalLM", is_causal=False, model_type="gemma3_text")
    assert _estimate(gemma3, "0.10.1").budget.capacity is not None
    assert _estimate(gemma3, "0.10.2").budget.capacity is None
    gemma2 = _decoder(tmp_path, "Gemma2ForCausalLM", is_causal=False, model_type="gemma2")
    for version in ("0.12.0", "0.22.0", "0.34.0"):
        assert _estimate(gemma2, version).budget.capacity is not None


def test_classes_vllm_makes_bidirectional_as_pooling_models(tmp_path: Path) -> None:
    """LlamaBidirectionalConfig (0.14.0+) and GritLM.__init__ (the pooling runner only) set is_causal false."""
    llama = _decoder(tmp_path, "LlamaBidirectionalModel", model_type="llama")
    for version in ("0.14.0", "0.22.0", "0.34.0"):
        assert _estimate(llama, version).budget.capacity is None
    grit = _decoder(tmp_path, "GritLM", model_type="llama")
    assert _estimate(grit, "0.12.0").budget.capacity is None
    assert _estimate(grit, "0.12.0", pooling=False).budget.capacity is not None  # generating, it is causal


def test_a_generate_server_is_not_sized_as_bidirectional() -> None:
    arch = replace(catalog_architecture("Qwen/Qwen3-8B"), is_causal=False)
    assert not without_kv_cache(arch, rules_for("0.22.0"), pooling=False)
    assert without_kv_cache(arch, rules_for("0.22.0"), pooling=True)
    assert kv_geometry(arch, rules=rules_for("0.22.0"), pooling=True) is None
    assert kv_geometry(arch, rules=rules_for("0.22.0")) is not None


def test_a_class_pooling_cls_by_default_keeps_its_kv_pool() -> None:
    """vLLM's ModelConfig.attn_type calls a CLS-pooling class encoder_only (0.12.0+), but only chunked prefill and
    prefix caching read it: a causal decoder's layers still give KV specs."""
    arch = replace(catalog_architecture("Qwen/Qwen3-Embedding-0.6B"), architecture="ColQwen3")
    for version in ("0.12.0", "0.22.0", "0.34.0"):
        assert not bidirectional(arch, rules_for(version))
        assert not without_kv_cache(arch, rules_for(version), pooling=True)


def test_chunking_still_follows_the_config_flag(tmp_path: Path) -> None:
    arch = architecture_from_path(Path(_decoder(tmp_path, "Qwen3ForCausalLM", is_causal=False)), "q")
    assert not chunks_prefill(arch, rules_for("0.22.0"), pooling=True)


def test_no_catalog_model_is_served_bidirectionally() -> None:
    """Only the catalog's encoder (BAAI/bge-m3, no KV cache in every release) goes without a pool."""
    for model in catalog_ids():
        arch = catalog_architecture(model)
        for entry in releases():
            assert without_kv_cache(arch, entry, pooling=True) == arch.encoder_only, (model, entry.label)
    assert catalog_architecture("BAAI/bge-m3").encoder_only


def test_every_release_gives_each_listed_class_an_outcome() -> None:
    for entry in releases():
        listed = entry.bidirectional_attention
        assert set(listed.always) <= set(listed.no_kv) | set(listed.fails), entry.label
        assert not set(listed.no_kv) & set(listed.fails), entry.label
    with pytest.raises(ValidationError, match="always names GritLM"):
        BidirectionalAttention(no_kv=(), fails=(), failure="none", always=("GritLM",))
    with pytest.raises(ValidationError, match="failure says how"):
        BidirectionalAttention(no_kv=(), fails=("Qwen3ForCausalLM",), failure="none", always=())
