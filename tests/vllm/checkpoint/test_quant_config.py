"""Quantization blocks are read the way each method's `from_config` reads them (real blocks, cited)."""

from __future__ import annotations

import pytest

from colo.vllm.checkpoint.quant_config import QuantConfigError, read_quantization
from colo.vllm.checkpoint.quantization import WeightFormat
from tests.vllm.checkpoint.quant_fixtures import FIXTURES, fixture, scheme_of


def test_every_fixture_names_its_public_source() -> None:
    for path in FIXTURES.glob("*.json"):
        block, _ = fixture(path.stem)
        assert block


def test_fp8_block_checkpoints_carry_their_128x128_blocks() -> None:
    scheme = scheme_of("fp8-block")
    assert scheme.method == "fp8" and scheme.ignore_rule == "exact"
    assert scheme.primary == WeightFormat("fp8", 8, "block", block=(128, 128), weight_only=False)


def test_fp8_without_blocks_is_per_tensor() -> None:
    assert scheme_of("fp8-per-tensor-static").primary == WeightFormat("fp8", 8, "tensor", weight_only=False)


def test_fp8_falls_back_to_modules_to_not_convert_when_ignored_layers_is_empty() -> None:
    scheme = read_quantization(
        {
            "quant_method": "fp8",
            "ignored_layers": [],
            "modules_to_not_convert": ["lm_head"],
            "activation_scheme": "dynamic",
        }
    )
    assert scheme.ignore == ("lm_head",)


def test_awq_keeps_its_zero_points_and_group_size() -> None:
    scheme = scheme_of("awq")
    assert scheme.method == "awq" and scheme.ignore_rule == "substring"
    assert scheme.primary == WeightFormat("int", 4, "group", 128, symmetric=False)
    assert scheme.marlin_keys_present


@pytest.mark.parametrize("group_size", [-1, None])
def test_a_group_size_of_minus_one_means_one_scale_per_output_row(group_size: int | None) -> None:
    scheme = read_quantization({"quant_method": "gptq", "bits": 4, "group_size": group_size, "sym": True})
    weights = scheme.primary
    assert weights is not None and weights.strategy == "channel"
    assert weights.groups_along(4096) == 1


def test_desc_act_with_one_group_per_row_orders_nothing() -> None:
    scheme = read_quantization(
        {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": True, "sym": True}
    )
    assert scheme.primary is not None and not scheme.primary.act_order


def test_gptq_reads_act_order_and_whether_marlin_can_take_it() -> None:
    scheme = scheme_of("gptq")  # TheBloke quantize_config.json: 4 bit, group 128, desc_act, sym
    assert scheme.declared_in == "quantize_config.json"
    assert scheme.primary == WeightFormat("int", 4, "group", 128, symmetric=True, act_order=True)
    assert scheme.marlin_keys_present


def test_gptq_without_sym_cannot_be_converted_to_marlin() -> None:
    scheme = read_quantization({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False})
    assert not scheme.marlin_keys_present


def test_gptq_flattens_modules_in_block_to_quantize() -> None:
    scheme = scheme_of("gptq-modules_in_block_to_quantize")
    assert scheme.modules_in_block_to_quantize is not None
    assert "self_attn.q_proj" in scheme.modules_in_block_to_quantize
    assert "self_attn.o_proj" in scheme.modules_in_block_to_quantize


def test_gptqmodel_dynamic_rules_keep_their_order_and_skip_marks() -> None:
    scheme = read_quantization(
        {
            "quant_method": "gptq",
            "bits": 4,
            "group_size": 128,
            "sym": True,
            "desc_act": False,
            "dynamic": {r"-:.*\.mlp\.gate$": {}, r"+:.*\.1[0-5]\..*": {"bits": 8}},
        }
    )
    assert [(rule.pattern, rule.skip, rule.bits) for rule in scheme.dynamic] == [
        (r".*\.mlp\.gate$", True, None),
        (r".*\.1[0-5]\..*", False, 8),
    ]


def test_compressed_tensors_w8a8_int8_is_per_channel_with_int8_activations() -> None:
    scheme = scheme_of("ct-w8a8-int8-channel")
    assert scheme.method == "compressed-tensors" and scheme.ignore == ("lm_head",)
    assert scheme.primary == WeightFormat("int", 8, "channel", weight_only=False)


def test_compressed_tensors_fp8_static_is_per_tensor() -> None:
    assert scheme_of("ct-w8a8-fp8-tensor-static").primary == WeightFormat(
        "fp8", 8, "tensor", weight_only=False
    )


def test_compressed_tensors_w8a16_pack_quantized_keeps_its_group_of_32() -> None:
    assert scheme_of("ct-w8a16-pack-quantized-group32").primary == WeightFormat("int", 8, "group", 32)


def test_compressed_tensors_nvfp4_is_recognised_by_float_4_bit_groups_of_16() -> None:
    assert scheme_of("ct-nvfp4").primary == WeightFormat("nvfp4", 4, "group", 16, weight_only=False)


def test_compressed_tensors_keeps_every_config_group_with_its_targets() -> None:
    block, _ = fixture("ct-fp8-block-plus-nvfp4-mixed")
    groups = dict(block["config_groups"])
    groups["config_group_1"] = {  # the NVFP4 expert group the copy read cut off, in the same format
        "targets": ["re:.*mlp.experts.*"],
        "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
        "input_activations": {"num_bits": 4, "type": "float", "group_size": 16},
    }
    scheme = read_quantization({**block, "config_groups": groups})
    assert [group.targets for group in scheme.groups] == [
        ("re:.*self_attn.(o_proj|q_b_proj).*",),
        ("re:.*mlp.experts.*",),
    ]
    assert [group.weights.kind for group in scheme.groups] == ["fp8", "nvfp4"]


def test_modelopt_fp8_and_nvfp4_are_told_apart_by_quant_algo() -> None:
    fp8, fp4 = scheme_of("modelopt-fp8"), scheme_of("modelopt_fp4")
    assert (fp8.method, fp8.quant_algo, fp8.kv_cache_quant_algo) == ("modelopt", "FP8", "FP8")
    assert fp8.primary == WeightFormat("fp8", 8, "tensor", weight_only=False)
    assert (fp4.method, fp4.quant_algo) == ("modelopt_fp4", "NVFP4")
    assert fp4.primary == WeightFormat("nvfp4", 4, "group", 16, weight_only=False)
    assert fp4.ignore == ("lm_head",) and fp4.declared_in == "hf_quant_config.json"


def test_a_config_json_modelopt_block_carries_its_keys_flat() -> None:
    scheme = read_quantization({"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head"]})
    assert scheme.method == "modelopt_fp4" and scheme.ignore == ("lm_head",)


def test_an_unknown_modelopt_algorithm_is_refused_as_vllm_does() -> None:
    with pytest.raises(QuantConfigError, match="Unknown ModelOpt quant algo: INT3"):
        read_quantization({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "INT3"}})


def test_bitsandbytes_4_bit_double_quant_is_recorded() -> None:
    scheme = scheme_of("bitsandbytes-nf4-double-quant")
    assert scheme.primary == WeightFormat("bnb", 4, "group", 64, double_quant=True)
    assert scheme.ignore_rule == "bitsandbytes"


def test_bitsandbytes_8_bit_is_one_byte_per_weight() -> None:
    assert scheme_of("bitsandbytes-8bit").primary == WeightFormat("bnb", 8, "channel")


def test_mxfp4_quantizes_experts_only_whatever_its_list_says() -> None:
    scheme = scheme_of("mxfp4")
    assert scheme.ignore_rule == "every_linear"
    assert scheme.groups[0].targets == ("experts",)


def test_a_method_colo_cannot_read_keeps_its_name_and_no_formats() -> None:
    scheme = read_quantization({"quant_method": "gguf"})
    assert scheme.method == "gguf" and scheme.quantized and scheme.groups == ()


def test_compressed_tensors_spelled_with_an_underscore_is_normalised() -> None:
    assert (
        read_quantization({"quant_method": "compressed_tensors", "config_groups": {}}).method
        == "compressed-tensors"
    )


def test_an_fp8_block_without_its_activation_scheme_is_refused_as_vllm_refuses_it() -> None:
    """Fp8Config.from_config reads activation_scheme with get_from_keys, which raises when it is absent."""
    with pytest.raises(QuantConfigError, match=r"Cannot find any of \['activation_scheme'\]"):
        read_quantization({"quant_method": "fp8", "weight_block_size": [128, 128]})
