"""The encoders vLLM registers have no KV pool.

vLLM maps a registered name to a model class (vllm 0.8.0 - 0.34.0 model_executor/models/registry.py); every
attention layer of the BERT family's classes (bert.py, roberta.py, ernie.py, colbert.py, bert_with_rope.py,
modernbert.py) is ENCODER_ONLY, which gives no KV cache spec, so no pool is allocated. Configs:
tests/vllm/checkpoint/encoder_configs (each cites its public source).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colo.vllm import EstimateRefused, EstimateRequest, estimate
from colo.vllm.architectures import releases_knowing
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.hf_config import ENCODER_ARCHITECTURES, from_hf_config
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


def test_snowflakes_gte_model_is_built_like_gte_new_model() -> None:
    """GteModel is bert_with_rope.py::SnowflakeGteNewModel, a GteNewModel with other weight names."""
    new = estimate_weights(_arch("gte-multilingual-base"), pooling=True, vllm_version="0.22.0")
    snowflake_arch = _arch("gte-multilingual-base", architectures=["GteModel"], model_type="gte")
    snowflake = estimate_weights(snowflake_arch, pooling=True, vllm_version="0.22.0")
    assert snowflake_arch.encoder_only
    assert (snowflake.bytes, snowflake.detail) == (new.bytes, new.detail)


def test_the_gte_reranker_is_the_same_encoder_with_a_head(tmp_path: Path) -> None:
    reranker = _arch("gte-multilingual-base", architectures=["GteNewForSequenceClassification"])
    assert reranker.encoder_only
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
