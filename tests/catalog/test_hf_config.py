"""Reading config.json, one concern at a time: each step on its own, on the config shapes it exists for."""

from __future__ import annotations

from typing import Any

import pytest

from colo.catalog.architecture import ArchitectureError
from colo.catalog.hf_config import (
    HfConfig,
    dimensions,
    from_hf_config,
    layer_kinds,
    mla_geometry,
    moe_geometry,
    quantization_scheme,
    vision_parameters,
)
from tests.model_files import TINY_CONFIG


def _config(**keys: Any) -> HfConfig:
    return HfConfig.of({**TINY_CONFIG, **keys})


def test_missing_heads_and_widths_fall_back_to_the_llama_conventions() -> None:
    raw = {k: v for k, v in TINY_CONFIG.items() if k not in ("num_key_value_heads", "intermediate_size")}
    dims = dimensions(HfConfig.of(raw))
    assert dims.num_kv_heads == dims.num_attention_heads == 4
    assert dims.head_dim == 64 // 4
    assert dims.intermediate_size == 4 * 64


def test_a_multimodal_config_is_read_from_its_text_config_with_the_top_level_vocabulary() -> None:
    text = {k: v for k, v in TINY_CONFIG.items() if k not in ("architectures", "vocab_size")}
    config = HfConfig.of(
        {"architectures": ["Gemma3ForConditionalGeneration"], "vocab_size": 777, "text_config": text}
    )
    assert config.architecture == "Gemma3ForConditionalGeneration"
    assert dimensions(config).vocab_size == 777


def test_a_config_without_a_needed_key_names_the_keys_it_looked_for() -> None:
    raw = {k: v for k, v in TINY_CONFIG.items() if k != "num_hidden_layers"}
    with pytest.raises(ArchitectureError, match="num_hidden_layers, n_layer, num_layers"):
        from_hf_config(raw, "tiny")


def test_hybrids_with_an_interval_get_one_full_attention_layer_in_n() -> None:
    kinds = layer_kinds(_config(full_attention_interval=4), 48)
    assert (kinds.full, kinds.linear, kinds.sliding, kinds.window) == (12, 36, 0, None)


def test_a_sliding_pattern_leaves_one_global_layer_in_n() -> None:
    kinds = layer_kinds(_config(sliding_window=1024, sliding_window_pattern=6), 62)
    assert (kinds.full, kinds.sliding, kinds.window) == (10, 52, 1024)


def test_qwen_configs_carry_a_sliding_window_they_do_not_use() -> None:
    qwen = layer_kinds(_config(architectures=["Qwen3ForCausalLM"], sliding_window=4096), 36)
    mistral = layer_kinds(_config(architectures=["MistralForCausalLM"], sliding_window=4096), 32)
    assert (qwen.full, qwen.sliding, qwen.window) == (36, 0, None)
    assert (mistral.full, mistral.sliding, mistral.window) == (0, 32, 4096)


def test_deepseek_keeps_its_first_layers_dense_and_sizes_shared_experts_from_the_expert_width() -> None:
    config = _config(
        n_routed_experts=64, first_k_dense_replace=1, n_shared_experts=2, moe_intermediate_size=96
    )
    moe = moe_geometry(config, dimensions(config))
    assert moe is not None
    assert (moe.num_experts, moe.moe_layers, moe.shared_expert_intermediate_size) == (64, 1, 192)


def test_a_dense_config_has_no_moe_or_mla_geometry() -> None:
    config = _config()
    assert moe_geometry(config, dimensions(config)) is None
    assert mla_geometry(config) is None


@pytest.mark.parametrize(
    ("quantization_config", "method", "group"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", 128),
        ({"quant_method": "awq_marlin", "group_size": 64}, "awq", 64),
        ({"quant_method": "modelopt"}, "nvfp4", 16),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"type": "int", "num_bits": 4, "group_size": 32}}},
            },
            "gptq",
            32,
        ),
        ({}, "none", 128),
    ],
)
def test_quantization_methods_map_to_the_layouts_colo_sizes(
    quantization_config: dict[str, Any], method: str, group: int
) -> None:
    scheme = quantization_scheme(_config(quantization_config=quantization_config))
    assert (scheme.method, scheme.group_size) == (method, group)


def test_modules_a_checkpoint_keeps_unquantized_are_kept() -> None:
    scheme = quantization_scheme(_config(quantization_config={"quant_method": "fp8", "ignore": ["lm_head"]}))
    assert scheme.unquantized_modules == ("lm_head",)


def test_a_text_only_model_has_no_vision_tower_and_a_vision_config_adds_one() -> None:
    assert vision_parameters(_config(), 64) == 0
    tower = _config(vision_config={"hidden_size": 32, "depth": 2, "intermediate_size": 64, "patch_size": 2})
    per_block = 4 * 32 * 32 + 2 * 32 * 64 + 4 * 32
    patches = 3 * 1 * 2 * 2 * 32
    merger = 32 * 32 + 32 * 64
    assert vision_parameters(tower, 64) == 2 * per_block + patches + merger
