"""Reading config.json, one concern at a time: each step on its own, on the config shapes it exists for."""

from __future__ import annotations

from typing import Any

import pytest

from colo.vllm.checkpoint.architecture import ArchitectureError
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.hf_config import (
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


def test_the_quantization_block_is_read_from_config_json() -> None:
    scheme = quantization_scheme(
        _config(
            quantization_config={
                "quant_method": "fp8",
                "activation_scheme": "dynamic",
                "weight_block_size": [128, 128],
            }
        )
    )
    assert (scheme.method, scheme.declared_in) == ("fp8", "config.json")


def test_the_older_compression_config_key_is_read_like_quantization_config() -> None:
    scheme = quantization_scheme(
        _config(compression_config={"quant_method": "compressed-tensors", "config_groups": {}})
    )
    assert scheme.method == "compressed-tensors"


def test_a_block_only_in_text_config_is_marked_so_releases_that_miss_it_can_say_so() -> None:
    raw = {
        "architectures": ["X"],
        "text_config": {
            **TINY_CONFIG,
            "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"},
        },
    }
    assert quantization_scheme(HfConfig.of(raw)).declared_in == "text_config"


def test_side_files_are_read_only_when_config_json_has_no_block() -> None:
    modelopt = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}
    gptq = {"bits": 4, "group_size": 128, "desc_act": False, "sym": True}
    assert (
        quantization_scheme(_config(), {"hf_quant_config.json": modelopt}).declared_in
        == "hf_quant_config.json"
    )
    from_gptq_file = quantization_scheme(_config(), {"quantize_config.json": gptq})
    assert (from_gptq_file.method, from_gptq_file.declared_in) == ("gptq", "quantize_config.json")
    own_block = _config(quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"})
    assert quantization_scheme(own_block, {"hf_quant_config.json": modelopt}).method == "fp8"


def test_a_full_precision_config_has_no_quantization() -> None:
    scheme = quantization_scheme(_config())
    assert not scheme.quantized and scheme.method == "none"


def test_the_architecture_keeps_the_declared_method_and_the_model_type() -> None:
    arch = from_hf_config(
        {**TINY_CONFIG, "model_type": "gpt_oss", "quantization_config": {"quant_method": "mxfp4"}}, "t"
    )
    assert (arch.quantization, arch.quant_scheme.method, arch.model_type) == ("mxfp4", "mxfp4", "gpt_oss")


def test_a_text_only_model_has_no_vision_tower_and_a_vision_config_adds_one() -> None:
    assert vision_parameters(_config(), 64) == 0
    tower = _config(vision_config={"hidden_size": 32, "depth": 2, "intermediate_size": 64, "patch_size": 2})
    per_block = 4 * 32 * 32 + 2 * 32 * 64 + 4 * 32
    patches = 3 * 1 * 2 * 2 * 32
    merger = 32 * 32 + 32 * 64
    assert vision_parameters(tower, 64) == 2 * per_block + patches + merger


def test_phi3_mini_slides_on_every_layer_with_its_2047_token_window() -> None:
    arch = catalog_architecture("microsoft/Phi-3-mini-4k-instruct")
    assert (arch.sliding_attention_layers, arch.full_attention_layers) == (32, 0)
    assert arch.sliding_window == 2047 and arch.num_kv_heads == arch.num_attention_heads == 32


def test_a_renamed_hub_id_is_the_checkpoint_it_names() -> None:
    old = catalog_architecture("meta-llama/Meta-Llama-3.1-8B-Instruct")
    new = catalog_architecture("meta-llama/Llama-3.1-8B-Instruct")
    assert (old.num_layers, old.hidden_size, old.vocab_size) == (
        new.num_layers,
        new.hidden_size,
        new.vocab_size,
    )
