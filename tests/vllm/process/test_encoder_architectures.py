"""The encoders vLLM registers have no KV pool, and those that rotate q and k hold rotary caches in the weights.

vLLM maps a registered name to a model class (vllm 0.8.0 - 0.34.0 model_executor/models/registry.py); every
attention layer of the BERT family's classes (bert.py, roberta.py, ernie.py, colbert.py, bert_with_rope.py,
modernbert.py) is ENCODER_ONLY, which gives no KV cache spec, so no pool is allocated. The GTE family
(bert_with_rope.py: GteModel, GteNewModel, GteNewForSequenceClassification) has no position table, a gated MLP
(config.py::GteNewModelConfig turns gelu into geglu) and one rotary cache of max_position_embeddings rows in the
model dtype; ModernBERT (modernbert.py) one per layer (0.9.2 - 0.11.2) or per distinct theta (0.12.0+), float16
until 0.23.0 and in the model dtype from 0.24.0. Configs: tests/vllm/checkpoint/encoder_configs (each cites its
public source).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from colo.vllm import EstimateRefused, EstimateRequest, catalog_architecture, estimate
from colo.vllm.architectures import releases_knowing
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.hf_config import ENCODER_ARCHITECTURES, from_hf_config
from colo.vllm.process.activation import SamplerProfile, activation_peak
from colo.vllm.process.attention_type import without_kv_cache
from colo.vllm.process.weights import estimate_weights
from colo.vllm.rules import rules_for

CONFIGS = Path(__file__).parents[1] / "checkpoint" / "encoder_configs"
MIB = 1024 * 1024


def _config(name: str, **keys: Any) -> dict[str, Any]:
    """A Hub-style config.json as the fixture holds it (without its `_source`), with `keys` changed."""
    raw = json.loads((CONFIGS / f"{name}.json").read_text())
    assert raw.pop("_source"), f"{name}.json must cite its source"
    return {**raw, **keys}


def _arch(name: str, **keys: Any) -> ModelArchitecture:
    return from_hf_config(_config(name, **keys), name)


def _model(tmp_path: Path, name: str, **keys: Any) -> str:
    root = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
    root.mkdir()
    (root / "config.json").write_text(json.dumps(_config(name, **keys)))
    return str(root)


def _estimate(model: str, version: str):  # type: ignore[no-untyped-def]
    return estimate(EstimateRequest(model=model, vllm_version=version, gpu="L40S", pooling=True))


@pytest.mark.parametrize("version", ("0.10.1", "0.12.0", "0.22.0", "0.34.0"))
def test_a_gte_multilingual_base_config_has_no_kv_pool(tmp_path: Path, version: str) -> None:
    arch = _arch("gte-multilingual-base")
    assert arch.encoder_only and arch.full_attention_layers == 0
    assert without_kv_cache(arch, rules_for(version), pooling=True)
    assert _estimate(_model(tmp_path, "gte-multilingual-base"), version).budget.capacity is None


def test_the_gte_rotary_cache_is_in_the_weights_in_the_model_dtype() -> None:
    """get_rope(head_size 64, max_position 8192, NTK scaling): NTKScalingRotaryEmbedding keeps
    max_position_embeddings rows (layers/rotary_embedding/ntk_scaling_rope.py scales the frequencies only)."""
    arch = _arch("gte-multilingual-base")
    assert (arch.encoder_rope, arch.rotary_dim, arch.rotary_cache_rows) == ("bert_with_rope", 64, (8192,))
    for version in ("0.10.1", "0.22.0", "0.34.0"):
        assert estimate_weights(arch, pooling=True, vllm_version=version).detail["rotary"] == 8192 * 64 * 2
        float32 = estimate_weights(arch.served_in("float32"), pooling=True, vllm_version=version)
        assert float32.detail["rotary"] == 8192 * 64 * 4


def test_a_bert_style_encoder_still_has_no_rotary_cache() -> None:
    bge = catalog_architecture("BAAI/bge-m3")
    assert bge.encoder_rope == "none"
    assert estimate_weights(bge, pooling=True).detail["rotary"] == 0


def test_gte_weights_count_the_gated_mlp_and_no_position_table() -> None:
    """BertWithRopeGatedMLP's gate_up_proj (hidden -> 2 x intermediate) and no position embeddings: the
    305M parameters of gte-multilingual-base's model card (a plain MLP would give 277M)."""
    arch = _arch("gte-multilingual-base")
    assert arch.gated_encoder_mlp and arch.type_vocab_size == 1
    assert estimate_weights(arch, pooling=True).parameters == pytest.approx(305e6, rel=0.002)


def test_snowflakes_gte_model_is_built_like_gte_new_model() -> None:
    """GteModel is bert_with_rope.py::SnowflakeGteNewModel, a GteNewModel with other weight names."""
    new = estimate_weights(_arch("gte-multilingual-base"), pooling=True, vllm_version="0.22.0")
    snowflake_arch = _arch("gte-multilingual-base", architectures=["GteModel"], model_type="gte")
    snowflake = estimate_weights(snowflake_arch, pooling=True, vllm_version="0.22.0")
    assert snowflake_arch.encoder_only
    assert (snowflake.bytes, snowflake.detail) == (new.bytes, new.detail)


def test_the_gte_reranker_is_the_same_encoder_with_a_head(tmp_path: Path) -> None:
    reranker = _arch("gte-multilingual-base", architectures=["GteNewForSequenceClassification"])
    assert reranker.encoder_only and reranker.encoder_rope == "bert_with_rope"
    model = _model(tmp_path, "gte-multilingual-base", architectures=["GteNewForSequenceClassification"])
    assert _estimate(model, "0.22.0").budget.capacity is None


def test_releases_before_0_10_1_do_not_serve_gte_new_model(tmp_path: Path) -> None:
    """0.8.x registers no GteNewModel; 0.9.0 - 0.10.0 run it on the V0 engine (_is_v1_supported_oracle)."""
    model = _model(tmp_path, "gte-multilingual-base")
    with pytest.raises(EstimateRefused) as unregistered:
        _estimate(model, "0.8.5")
    assert "vLLM 0.8.5 does not register GteNewModel" in unregistered.value.message
    for version in ("0.9.2", "0.10.0"):
        with pytest.raises(EstimateRefused) as on_v0:
            _estimate(model, version)
        assert "['GteNewModel'] is not supported by the V1 Engine. Falling back to V0." in on_v0.value.message


@pytest.mark.parametrize(
    "name",
    [
        "BertModel",
        "BertSpladeSparseEmbeddingModel",
        "BgeM3EmbeddingModel",
        "ColBERTJinaRobertaModel",
        "ColBERTModernBertModel",
        "ErnieForSequenceClassification",
        "ErnieModel",
        "GteModel",
        "GteNewForSequenceClassification",
        "GteNewModel",
        "HF_ColBERT",
        "ModernBertForSequenceClassification",
        "ModernBertForTokenClassification",
        "ModernBertModel",
        "NomicBertModel",
        "RobertaForMaskedLM",
        "XLMRobertaForSequenceClassification",
        "XLMRobertaModel",
    ],
)
def test_every_encoder_class_vllm_registers_is_read_as_an_encoder(name: str) -> None:
    arch = _arch("gte-multilingual-base", architectures=[name])
    assert arch.encoder_only
    assert releases_knowing(name), f"no mirrored release registers {name}"


@pytest.mark.parametrize("name", ["Ernie4_5ForCausalLM", "ColBERTLfm2Model", "JinaEmbeddingsV5Model"])
def test_decoders_with_a_neighbours_name_keep_their_kv_pool(name: str) -> None:
    """ernie45.py, colbert.py's LFM2 backbone and jina.py's Qwen3 are decoders."""
    assert not _arch("gte-multilingual-base", architectures=[name]).encoder_only


def test_every_listed_encoder_name_is_registered_by_a_mirrored_release() -> None:
    for name in ENCODER_ARCHITECTURES:
        assert releases_knowing(name), name


def test_modernbert_builds_a_float16_rotary_cache_per_layer_before_0_12() -> None:
    """0.9.2 - 0.11.2: every ModernBertAttention builds its own ModernBertRotaryEmbedding (dtype float16)."""
    arch = _arch("modernbert-base").served_in("float32")
    assert (arch.encoder_rope, arch.gated_encoder_mlp, arch.rotary_cache_rows) == (
        "modernbert",
        True,
        (8192,) * 2,
    )
    for version in ("0.9.2", "0.11.0", "0.11.2"):
        assert estimate_weights(arch, pooling=True, vllm_version=version).detail["rotary"] == 22 * MIB


def test_modernbert_shares_one_cache_per_theta_from_0_12() -> None:
    """get_rope's cache: the global layers' theta and the sliding layers' each one; float16 through 0.23.0, the
    model dtype from 0.24.0 (ModernBertEncoderLayer passes model_config.dtype)."""
    arch = _arch("modernbert-base").served_in("float32")
    for version in ("0.12.0", "0.22.0", "0.23.0"):
        assert estimate_weights(arch, pooling=True, vllm_version=version).detail["rotary"] == 2 * MIB
    for version in ("0.24.0", "0.34.0"):
        assert estimate_weights(arch, pooling=True, vllm_version=version).detail["rotary"] == 4 * MIB
    one_theta = _arch("modernbert-base", local_rope_theta=160000.0).served_in("float32")
    assert estimate_weights(one_theta, pooling=True, vllm_version="0.22.0").detail["rotary"] == MIB


def test_modernbert_parameters_match_its_card(tmp_path: Path) -> None:
    """ModernBertMLP's Wi (hidden -> 2 x intermediate), no position table: ModernBERT-base's 149M."""
    assert estimate_weights(_arch("modernbert-base"), pooling=True).parameters == pytest.approx(
        149e6, rel=0.002
    )
    assert _estimate(_model(tmp_path, "modernbert-base"), "0.22.0").budget.capacity is None


def test_a_compiled_rope_encoder_writes_rotated_q_and_k() -> None:
    """The native rotary embedding runs in BertWithRopeAttention.forward as in a decoder's attention: compiled, it
    writes new q and k beside the qkv output; a BERT-style encoder has none to run."""
    gte = _arch("gte-multilingual-base", intermediate_size=64)  # a narrow MLP: the attention's buffers peak
    absolute = replace(gte, encoder_rope="none")
    sampler = SamplerProfile(bytes_per_logit=0, buffer_rows=0, hidden_states_held=False)
    tokens = 8192

    def forward(arch: ModelArchitecture, *, compiled: bool) -> int:
        peak = activation_peak(
            arch,
            max_num_batched_tokens=tokens,
            max_num_seqs=256,
            pooling=True,
            sampler=sampler,
            compiled=compiled,
        )
        return peak.forward_bytes

    rotated = tokens * (768 + 768) * 2  # the new q and k (768 wide each), in bf16
    assert forward(gte, compiled=True) == forward(absolute, compiled=True) + rotated
    assert forward(gte, compiled=False) == forward(absolute, compiled=False)
