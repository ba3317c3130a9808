"""A NomicBertModel config (nomic-embed-text-v1 / v1.5) is read the way vLLM reads it, release by release.

Its config.json names its geometry with GPT-2 keys (n_embd, n_layer, n_head, n_inner, n_positions), which the
checkpoint's NomicBertConfig, a transformers GPT2Config, maps to the standard names; vllm's
models/config.py::NomicBertModelConfig sets intermediate_size from n_inner, turns swiglu into silu (a gated MLP,
models/bert_with_rope.py::BertWithRopeGatedMLP) and puts qkv_proj_bias on every linear. The encoder has no KV
pool and no position table, and one rotary cache: of max_trained_positions rows up to 0.21.0, which also hold
max_model_len to that length (a user's longer one is refused), and of max_model_len rows from 0.22.0, which
derive max_model_len as for any model. Config: tests/vllm/checkpoint/encoder_configs/nomic-embed-text-v1.5.json
(it cites its public source).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from colo.vllm import EstimateRefused, EstimateRequest, estimate, position_ceiling
from colo.vllm.checkpoint.architecture import ArchitectureError, ModelArchitecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.process.weights import estimate_weights
from colo.vllm.rules import rules_for

CONFIGS = Path(__file__).parents[1] / "checkpoint" / "encoder_configs"
NAME = "nomic-embed-text-v1.5"
HEAD_DIM, ROWS_TRAINED, ROWS_CONFIG = 64, 2048, 8192
CAPPED = ("0.10.1", "0.13.0", "0.21.0")  # NomicBertModelConfig caps max_model_len (V1 serves it from 0.10.1)
BY_LENGTH = ("0.22.0", "0.34.0")


def _config(**keys: Any) -> dict[str, Any]:
    raw = json.loads((CONFIGS / f"{NAME}.json").read_text())
    assert raw.pop("_source"), f"{NAME}.json must cite its source"
    return {**raw, **keys}


def _arch(**keys: Any) -> ModelArchitecture:
    return from_hf_config(_config(**keys), NAME)


def _model(tmp_path: Path, side_files: dict[str, Any] | None = None, **keys: Any) -> str:
    root = tmp_path / f"{NAME}-{len(list(tmp_path.iterdir()))}"
    root.mkdir()
    (root / "config.json").write_text(json.dumps(_config(**keys)))
    for name, content in (side_files or {}).items():
        (root / name).write_text(json.dumps(content))
    return str(root)


def _estimate(model: str, version: str, **request: Any):  # type: ignore[no-untyped-def]
    return estimate(
        EstimateRequest(
            model=model, vllm_version=version, gpu="L40S", pooling=True, dtype="float16", **request
        )
    )


def _rotary(estimated) -> int:  # type: ignore[no-untyped-def]
    return int(
        estimate_weights(
            estimated.budget.spec.arch,
            pooling=True,
            vllm_version=estimated.budget.spec.vllm_version,
            max_model_len=estimated.budget.spec.limits.max_model_len,
        ).detail["rotary"]
    )


def test_the_gpt2_style_keys_give_the_encoders_geometry() -> None:
    arch = _arch()
    assert (arch.hidden_size, arch.num_layers, arch.num_attention_heads, arch.head_dim) == (768, 12, 12, 64)
    assert (arch.intermediate_size, arch.vocab_size, arch.max_position_embeddings) == (3072, 30528, 8192)
    # n_positions is max_position_embeddings (GPT2Config.attribute_map): the key vLLM names
    assert (arch.derived_max_model_len, arch.max_model_len_key) == (8192, "max_position_embeddings")
    assert arch.encoder_only and arch.full_attention_layers == 0
    assert (arch.encoder_rope, arch.rotary_dim) == ("nomic_bert", HEAD_DIM)


@pytest.mark.parametrize("version", CAPPED + BY_LENGTH)
def test_a_nomic_embedder_has_no_kv_pool(tmp_path: Path, version: str) -> None:
    assert _estimate(_model(tmp_path), version).budget.capacity is None


def test_weights_count_the_swiglu_mlp_no_position_table_and_no_biases() -> None:
    """Gated gate_up_proj (768 -> 2 x 3072), token types, no position rows, no linear biases (qkv_proj_bias
    false): the 137M parameters of the model card."""
    arch = _arch()
    assert arch.gated_encoder_mlp and arch.type_vocab_size == 2 and not arch.encoder_linear_bias
    assert estimate_weights(arch, pooling=True).parameters == pytest.approx(137e6, rel=0.002)


def test_gelu_builds_the_plain_mlp_and_qkv_proj_bias_a_bias_on_every_linear() -> None:
    """activation_function gelu: BertWithRopeMLP (up_proj only); config.bias = qkv_proj_bias on qkv, out_proj,
    the MLP's up (or gate_up) and down projections."""
    plain = estimate_weights(_arch(), pooling=True).parameters
    h, inter, layers = 768, 3072, 12
    gelu = estimate_weights(_arch(activation_function="gelu"), pooling=True).parameters
    assert plain - gelu == layers * h * inter
    biased = _arch(qkv_proj_bias=True, mlp_fc1_bias=True, mlp_fc2_bias=True)
    assert biased.encoder_linear_bias
    assert estimate_weights(biased, pooling=True).parameters - plain == layers * (5 * h + 2 * inter)


@pytest.mark.parametrize("version", CAPPED)
def test_up_to_0_21_max_model_len_defaults_to_the_trained_length(tmp_path: Path, version: str) -> None:
    """NomicBertModelConfig: without a user max_model_len, min(max_model_len, max_trained_positions); the rotary
    cache has max_trained_positions rows in the model dtype."""
    estimated = _estimate(_model(tmp_path), version)
    assert estimated.budget.spec.limits.max_model_len == ROWS_TRAINED
    assert _rotary(estimated) == ROWS_TRAINED * HEAD_DIM * 2
    shorter = {"sentence_bert_config.json": {"max_seq_length": 512, "do_lower_case": False}}
    assert _estimate(_model(tmp_path, shorter), version).budget.spec.limits.max_model_len == 512


def test_up_to_0_21_a_longer_max_model_len_is_refused(tmp_path: Path) -> None:
    """A user max_model_len is verified again with max_trained_positions as max_position_embeddings."""
    model = _model(tmp_path)
    for version in CAPPED:
        with pytest.raises(EstimateRefused) as refused:
            _estimate(model, version, max_model_len=4096)
        assert (
            "User-specified max_model_len (4096) is greater than the derived max_model_len "
            "(max_position_embeddings=2048 or model_max_length=None in model's config.json)"
        ) in refused.value.message
        assert "[fix: maxModelLen at most 2048" in refused.value.message
        allowed = _estimate(model, version, max_model_len=4096, allow_long_max_model_len=True)
        assert allowed.budget.spec.limits.max_model_len == 4096
        assert _rotary(allowed) == ROWS_TRAINED * HEAD_DIM * 2  # the cache keeps the trained rows
        assert _estimate(model, version, max_model_len=1024).budget.spec.limits.max_model_len == 1024


def test_up_to_0_21_the_rotary_cache_has_the_trained_rows_whatever_the_length() -> None:
    """rotary_kwargs `max_position: max_trained_positions`, in the model dtype."""
    arch = _arch()
    for version in CAPPED:
        for length in (None, 512, 8192):
            weights = estimate_weights(
                arch.served_in("float16"), pooling=True, vllm_version=version, max_model_len=length
            )
            assert weights.detail["rotary"] == ROWS_TRAINED * HEAD_DIM * 2
        full = estimate_weights(arch.served_in("float32"), pooling=True, vllm_version=version)
        assert full.detail["rotary"] == ROWS_TRAINED * HEAD_DIM * 4


@pytest.mark.parametrize("version", BY_LENGTH)
def test_from_0_22_the_rotary_cache_follows_max_model_len(tmp_path: Path, version: str) -> None:
    """No cap: max_model_len is derived as any model's (n_positions here), and get_rope's max_position is it."""
    model = _model(tmp_path)
    estimated = _estimate(model, version)
    assert estimated.budget.spec.limits.max_model_len == ROWS_CONFIG
    assert _rotary(estimated) == ROWS_CONFIG * HEAD_DIM * 2
    shorter = _estimate(model, version, max_model_len=4096)
    assert _rotary(shorter) == 4096 * HEAD_DIM * 2
    assert (
        estimated.budget.weights_bytes - shorter.budget.weights_bytes == (ROWS_CONFIG - 4096) * HEAD_DIM * 2
    )
    full = estimate(
        EstimateRequest(model=model, vllm_version=version, gpu="L40S", pooling=True, dtype="float32")
    )
    assert _rotary(full) == ROWS_CONFIG * HEAD_DIM * 4


def test_the_planner_holds_an_embedding_server_to_the_positions_its_release_serves() -> None:
    arch = _arch()
    assert [position_ceiling(arch, rules_for(v)) for v in CAPPED] == [ROWS_TRAINED] * len(CAPPED)
    assert [position_ceiling(arch, rules_for(v)) for v in BY_LENGTH] == [ROWS_CONFIG] * len(BY_LENGTH)


def test_a_config_stating_max_position_embeddings_keeps_it_over_n_positions(tmp_path: Path) -> None:
    """GPT2Config's attribute_map makes both one attribute, and the file's max_position_embeddings is set last."""
    arch = _arch(max_position_embeddings=2048)
    assert (arch.max_position_embeddings, arch.derived_max_model_len) == (2048, 2048)
    assert (
        _estimate(_model(tmp_path, max_position_embeddings=2048), "0.22.0").budget.spec.limits.max_model_len
        == 2048
    )


def test_a_partial_rotary_fraction_narrows_the_cache() -> None:
    arch = _arch(rotary_emb_fraction=0.5)
    assert arch.rotary_dim == HEAD_DIM // 2
    rotary = estimate_weights(arch.served_in("float16"), pooling=True, vllm_version="0.21.0").detail["rotary"]
    assert rotary == ROWS_TRAINED * HEAD_DIM // 2 * 2


def test_a_nomic_moe_config_is_refused_rather_than_sized_as_dense() -> None:
    """nomic-embed-text-v2-moe: NomicMoE on every moe_every_n_layers-th layer, which colo does not size."""
    with pytest.raises(ArchitectureError, match="moe_every_n_layers"):
        _arch(moe_every_n_layers=2, num_experts=8, moe_top_k=2)
