"""Each quantization method matches its list of full-precision layers by its own rule."""

from __future__ import annotations

from typing import Any

import pytest

from colo.vllm.checkpoint.quant_config import read_quantization
from colo.vllm.checkpoint.quant_matching import FusedShardsDisagree, ModuleRef, module_format, text_name
from colo.vllm.checkpoint.quant_methods import quant_release
from colo.vllm.checkpoint.quantization import QuantizationScheme, WeightFormat
from tests.vllm.checkpoint.quant_fixtures import fixture, scheme_of

NEW, OLD = quant_release("0.33.0"), quant_release("0.10.0")
QKV = ModuleRef(
    "model.layers.0.self_attn.qkv_proj",
    shards=tuple(f"model.layers.0.self_attn.{s}_proj" for s in "qkv"),
)
DOWN = ModuleRef("model.layers.0.mlp.down_proj")
EXPERTS = ModuleRef("model.layers.0.mlp.experts", kind="experts", class_name="FusedMoE")
LM_HEAD = ModuleRef("lm_head", kind="lm_head", class_name="ParallelLMHead")


def _quantized(scheme: QuantizationScheme, module: ModuleRef, release: Any = NEW) -> bool:
    return module_format(scheme, module, release) is not None


def _fp8(ignore: list[str]) -> QuantizationScheme:
    return read_quantization(
        {"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ignore}
    )


def test_fp8_skips_only_exact_prefixes() -> None:
    assert not _quantized(_fp8(["model.layers.0.mlp.down_proj"]), DOWN)
    assert _quantized(_fp8(["down_proj"]), DOWN)  # a bare name is no exact prefix


def test_fp8_skips_a_fused_layer_when_every_shard_is_listed() -> None:
    assert not _quantized(_fp8([f"model.layers.0.self_attn.{s}_proj" for s in "qkv"]), QKV)


def test_fused_shards_that_disagree_are_refused_as_vllm_refuses_them() -> None:
    with pytest.raises(FusedShardsDisagree, match="some but not all shards"):
        module_format(_fp8(["model.layers.0.self_attn.q_proj"]), QKV, NEW)


def test_fp8_ignores_experts_only_from_0_11() -> None:
    scheme = _fp8(["model.layers.0.mlp.experts"])
    assert not _quantized(scheme, EXPERTS, NEW)
    assert _quantized(scheme, EXPERTS, OLD)


def test_no_method_but_some_quantizes_lm_head() -> None:
    assert not _quantized(_fp8([]), LM_HEAD)
    gptq = read_quantization(
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "lm_head": True}
    )
    assert _quantized(gptq, LM_HEAD)


def test_compressed_tensors_ignores_exact_names_and_re_patterns() -> None:
    block, _ = fixture("ct-w8a8-int8-channel")
    scheme = read_quantization({**block, "ignore": ["re:.*down_proj", "model.layers.0.self_attn.q_proj"]})
    assert not _quantized(scheme, DOWN)
    with pytest.raises(FusedShardsDisagree):
        module_format(scheme, QKV, NEW)


def test_compressed_tensors_targets_linear_layers_by_class_name() -> None:
    scheme = scheme_of("ct-w8a8-int8-channel")  # targets: ["Linear"]
    assert module_format(scheme, QKV, NEW) == WeightFormat("int", 8, "channel", weight_only=False)


def test_compressed_tensors_multi_group_gives_each_layer_its_groups_format() -> None:
    block, _ = fixture("ct-fp8-block-plus-nvfp4-mixed")
    groups = {
        **block["config_groups"],
        "config_group_1": {
            "targets": ["re:.*mlp.experts.*"],
            "weights": {"num_bits": 4, "type": "float", "group_size": 16},
            "input_activations": {"num_bits": 4, "type": "float"},
        },
    }
    scheme = read_quantization({**block, "config_groups": groups})
    o_proj = ModuleRef("model.layers.3.self_attn.o_proj")
    assert module_format(scheme, o_proj, NEW) == WeightFormat("fp8", 8, "block", block=(128, 128))
    expert_format = module_format(scheme, ModuleRef("model.layers.3.mlp.experts", kind="experts"), NEW)
    assert expert_format is not None and expert_format.kind == "nvfp4"
    assert module_format(scheme, DOWN, NEW) is None  # no group targets it: it stays in bf16


def test_compressed_tensors_quantizes_a_targeted_lm_head_from_0_20() -> None:
    block, _ = fixture("ct-w8a8-int8-channel")
    scheme = read_quantization(
        {
            **block,
            "ignore": [],
            "config_groups": {"g": {**block["config_groups"]["group_0"], "targets": ["Linear", "lm_head"]}},
        }
    )
    assert _quantized(scheme, LM_HEAD, quant_release("0.20.0"))
    assert not _quantized(scheme, LM_HEAD, quant_release("0.19.0"))


def test_awq_skips_by_substring() -> None:
    block, _ = fixture("awq")
    scheme = read_quantization({**block, "modules_to_not_convert": ["down_proj"]})
    assert not _quantized(scheme, DOWN)
    assert _quantized(scheme, QKV)


def test_gptq_quantizes_only_the_modules_in_block_to_quantize() -> None:
    scheme = scheme_of("gptq-modules_in_block_to_quantize")
    assert _quantized(scheme, QKV)
    assert not _quantized(scheme, DOWN)


def test_gptq_dynamic_rules_skip_or_override_per_module() -> None:
    scheme = read_quantization(
        {
            "quant_method": "gptq",
            "bits": 4,
            "group_size": 128,
            "sym": True,
            "desc_act": False,
            "dynamic": {r"-:.*\.0\.mlp\..*": {}, r"+:.*self_attn.*": {"bits": 8, "group_size": 64}},
        }
    )
    assert not _quantized(scheme, DOWN)
    assert module_format(scheme, QKV, NEW) == WeightFormat("int", 8, "group", 64)


def test_modelopt_excludes_by_exact_name_substring_and_wildcards_from_0_12() -> None:
    scheme = scheme_of("modelopt_fp4-wildcards")  # "model.layers.0.self_attn*"
    assert not _quantized(scheme, QKV, quant_release("0.12.0"))
    assert _quantized(scheme, QKV, quant_release("0.11.0"))
    assert _quantized(scheme, DOWN, quant_release("0.12.0"))


def test_modelopt_never_quantizes_a_vision_tower() -> None:
    tower = ModuleRef("vision_tower.blocks.0.attn.qkv")
    assert not _quantized(scheme_of("modelopt_fp4"), tower)


def test_modelopt_quantizes_an_unexcluded_lm_head_from_0_24() -> None:
    scheme = read_quantization({"quant_method": "modelopt", "quant_algo": "FP8", "ignore": []})
    assert _quantized(scheme, LM_HEAD, quant_release("0.24.0"))
    assert not _quantized(scheme, LM_HEAD, quant_release("0.23.0"))


def test_bitsandbytes_skips_a_dotted_component_or_a_leading_prefix() -> None:
    block, _ = fixture("bitsandbytes-nf4-double-quant")
    by_component = read_quantization({**block, "llm_int8_skip_modules": ["mlp"]})
    assert not _quantized(by_component, DOWN) and _quantized(by_component, QKV)
    by_prefix = read_quantization({**block, "llm_int8_skip_modules": ["model.layers.0.self_attn"]})
    assert not _quantized(by_prefix, QKV)
    partial = read_quantization({**block, "llm_int8_skip_modules": ["down"]})
    assert _quantized(partial, DOWN)


def test_mxfp4_keeps_every_linear_in_bf16_and_quantizes_experts() -> None:
    scheme = scheme_of("mxfp4")
    assert not _quantized(scheme, QKV)
    assert module_format(scheme, EXPERTS, NEW) == WeightFormat("mxfp4", 4, "group", 32)


def test_multimodal_names_match_colos_text_model_names() -> None:
    assert text_name("model.language_model.layers.0.mlp.gate") == "model.layers.0.mlp.gate"
    assert text_name("language_model.model.layers.0.mlp.gate") == "model.layers.0.mlp.gate"
    assert not _quantized(_fp8(["model.language_model.layers.0.mlp.down_proj"]), DOWN)
