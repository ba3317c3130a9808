"""The method vLLM runs for a checkpoint, release by release, and what it refuses (with its own words)."""

from __future__ import annotations

import pytest

from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.checkpoint.quant_config import read_quantization
from colo.vllm.checkpoint.quant_methods import (
    QuantizationRefused,
    all_quantization_names,
    check_quantization_name,
    log_informed,
    quant_release,
    quantization_names,
    resolve_architecture,
    resolve_quantization,
)
from colo.vllm.checkpoint.quantization import UNQUANTIZED, QuantizationScheme
from tests.model_files import TINY_CONFIG
from tests.vllm.checkpoint.quant_fixtures import scheme_of

A100, T4, H100 = (8, 0), (7, 5), (9, 0)
GPTQ_MARLIN_ABLE = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def _method(
    scheme: QuantizationScheme, flag: str | None, version: str, capability: tuple[int, int] = H100
) -> str:
    return resolve_quantization(scheme, flag, vllm_version=version, capability=capability).method


@pytest.mark.parametrize(("version", "accepted"), [("0.27.1", True), ("0.28.0", False), ("0.33.0", False)])
def test_bitsandbytes_is_refused_from_0_28(version: str, accepted: bool) -> None:
    assert ("bitsandbytes" in quantization_names(version)) is accepted
    if not accepted:
        with pytest.raises(QuantizationRefused, match="removed before"):
            check_quantization_name("bitsandbytes", version)


def test_gguf_leaves_core_vllm_in_0_24() -> None:
    check_quantization_name("gguf", "0.23.0")
    with pytest.raises(QuantizationRefused, match=r"invalid choice: 'gguf'"):
        check_quantization_name("gguf", "0.24.0")


def test_a_name_newer_than_the_release_says_when_it_arrived() -> None:
    with pytest.raises(QuantizationRefused, match=r"added in 0\.10\.1"):
        check_quantization_name("mxfp4", "0.10.0")


def test_0_34_drops_fp_quant_and_adds_w4afp8_and_two_online_shorthands() -> None:
    check_quantization_name("fp_quant", "0.33.0")
    with pytest.raises(QuantizationRefused, match=r"removed before 0\.34\.0"):
        check_quantization_name("fp_quant", "0.34.0")
    assert {"w4afp8", "lut_b_moe", "mxfp4_hadamard32"} <= set(quantization_names("0.34.0"))
    with pytest.raises(QuantizationRefused, match=r"added in 0\.34\.0"):
        check_quantization_name("w4afp8", "0.33.0")


def test_nvfp4_was_renamed_modelopt_fp4_in_0_9() -> None:
    assert "nvfp4" in quantization_names("0.8.5") and "modelopt_fp4" not in quantization_names("0.8.5")
    assert "modelopt_fp4" in quantization_names("0.9.0") and "nvfp4" not in quantization_names("0.9.0")


def test_every_name_of_every_release_is_a_choice() -> None:
    names = all_quantization_names()
    assert {"compressed-tensors", "modelopt", "modelopt_fp4", "awq_marlin", "gptq_marlin", "mxfp4"} <= set(
        names
    )
    assert list(names) == sorted(names)


def test_a_dev_build_follows_the_release_it_leads_to() -> None:
    assert quant_release("0.26.1rc1.dev608").first == quant_release("0.26.0").first


@pytest.mark.parametrize(
    ("version", "capability", "method"),
    [
        ("0.13.0", A100, "gptq_marlin"),
        ("0.13.0", T4, "gptq"),  # Marlin needs 8.0 before 0.14
        ("0.14.0", T4, "gptq_marlin"),  # and 7.5 from 0.14
        ("0.21.0", A100, "gptq_marlin"),
        ("0.22.0", A100, "auto_gptq"),
    ],
)
def test_gptq_checkpoints_resolve_to_the_kernel_of_their_release(
    version: str, capability: tuple[int, int], method: str
) -> None:
    assert _method(read_quantization(GPTQ_MARLIN_ABLE), None, version, capability) == method


def test_naming_gptq_keeps_the_exllama_kernel_until_0_22() -> None:
    scheme = read_quantization(GPTQ_MARLIN_ABLE)
    assert _method(scheme, "gptq", "0.21.0") == "gptq"
    assert _method(scheme, "gptq", "0.22.0") == "auto_gptq"


def test_awq_checkpoints_resolve_to_marlin_then_auto_awq() -> None:
    scheme = scheme_of("awq")
    assert _method(scheme, None, "0.23.0") == "awq_marlin"
    assert _method(scheme, "awq_marlin", "0.23.0") == "awq_marlin"
    assert _method(scheme, None, "0.24.0") == "auto_awq"
    assert _method(scheme, "awq", "0.24.0") == "auto_awq"


def test_a_quantization_that_disagrees_with_the_checkpoint_is_refused_in_vllms_words() -> None:
    with pytest.raises(QuantizationRefused) as refused:
        _method(scheme_of("awq"), "fp8", "0.20.0")
    assert str(refused.value) == (
        "ValueError: Quantization method specified in the model config (awq) does not match the "
        "quantization method specified in the `quantization` argument (fp8)."
    )


def test_naming_modelopt_on_an_nvfp4_checkpoint_becomes_modelopt_fp4() -> None:
    block = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    assert _method(read_quantization(block), "modelopt", "0.24.0") == "modelopt_fp4"


def test_modelopt_hf_quant_config_is_found_on_its_own_only_from_0_11() -> None:
    scheme = scheme_of("modelopt-fp8")
    with pytest.raises(QuantizationRefused, match=r"does not read hf_quant_config\.json on its own"):
        _method(scheme, None, "0.10.2")
    assert _method(scheme, "modelopt", "0.10.2") == "modelopt"
    assert _method(scheme, None, "0.11.0") == "modelopt"


def test_a_quantize_config_json_is_read_only_when_the_method_is_named() -> None:
    scheme = scheme_of("gptq")
    with pytest.raises(QuantizationRefused, match="set quantization to 'gptq'"):
        _method(scheme, None, "0.14.0")
    assert _method(scheme, "gptq", "0.14.0") == "gptq"


def test_gpt_oss_mxfp4_gets_its_own_name_from_0_20() -> None:
    scheme = scheme_of("mxfp4")
    assert resolve_quantization(scheme, None, vllm_version="0.19.0", model_type="gpt_oss").method == "mxfp4"
    assert (
        resolve_quantization(scheme, None, vllm_version="0.20.0", model_type="gpt_oss").method
        == "gpt_oss_mxfp4"
    )
    assert resolve_quantization(scheme, None, vllm_version="0.20.0", model_type="other").method == "mxfp4"


@pytest.mark.parametrize(
    ("version", "vendored"),
    [("0.10.1", False), ("0.11.0", False), ("0.11.2", False), ("0.12.0", True), ("0.33.0", True)],
)
def test_vllm_carries_triton_kernels_itself_only_from_0_12(version: str, vendored: bool) -> None:
    """Before 0.12 has_triton_kernels finds only the external package, which no wheel or official image installs."""
    assert quant_release(version).triton_kernels_vendored is vendored


def test_online_fp8_on_a_full_precision_checkpoint_until_0_31() -> None:
    resolved = resolve_quantization(UNQUANTIZED, "fp8", vllm_version="0.30.0")
    assert resolved.method == "fp8" and resolved.scheme.online
    with pytest.raises(QuantizationRefused, match="no longer supports online quantization"):
        resolve_quantization(UNQUANTIZED, "fp8", vllm_version="0.31.0")
    assert resolve_quantization(UNQUANTIZED, "fp8_per_tensor", vllm_version="0.31.0").scheme.online


def test_a_checkpoint_format_named_for_a_full_precision_checkpoint_is_refused() -> None:
    with pytest.raises(QuantizationRefused, match="Cannot find the config file for awq"):
        resolve_quantization(UNQUANTIZED, "awq", vllm_version="0.20.0")


def test_deprecated_methods_are_refused_from_0_14_without_the_bypass_flag() -> None:
    scheme = read_quantization({"quant_method": "fbgemm_fp8"})
    assert _method(scheme, None, "0.13.0") == "fbgemm_fp8"
    with pytest.raises(QuantizationRefused, match="--allow-deprecated-quantization"):
        _method(scheme, None, "0.14.0")


def test_auto_gptq_refuses_asymmetric_checkpoints_from_0_22() -> None:
    scheme = read_quantization({**GPTQ_MARLIN_ABLE, "sym": False})
    assert _method(scheme, None, "0.21.0") == "gptq"
    with pytest.raises(QuantizationRefused, match="bits=4, sym=False"):
        _method(scheme, None, "0.22.0")


def test_gptq_act_order_with_groups_is_refused_from_0_30() -> None:
    scheme = read_quantization({**GPTQ_MARLIN_ABLE, "desc_act": True})
    assert _method(scheme, None, "0.29.0") == "auto_gptq"
    with pytest.raises(QuantizationRefused, match="desc_act=True"):
        _method(scheme, None, "0.30.0")


def test_fp8_needs_compute_capability_8_0_before_0_14() -> None:
    scheme = scheme_of("fp8-block")
    with pytest.raises(QuantizationRefused, match=r"Minimum capability: 80\. Current capability: 75"):
        _method(scheme, None, "0.13.0", T4)
    assert _method(scheme, None, "0.14.0", T4) == "fp8"


def test_modelopt_kv_scheme_steers_auto_kv_dtype_only_from_0_14() -> None:
    raw = {
        **TINY_CONFIG,
        "quantization_config": {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_quant_algo": "FP8",
        },
    }
    arch: ModelArchitecture = from_hf_config(raw, "t")
    assert resolve_architecture(arch, None, vllm_version="0.14.0").quant_scheme.kv_cache_quant_algo == "FP8"
    assert resolve_architecture(arch, None, vllm_version="0.13.0").quant_scheme.kv_cache_quant_algo == ""


def test_resolving_records_vllms_method_and_the_flag_given() -> None:
    arch = from_hf_config({**TINY_CONFIG, "quantization_config": GPTQ_MARLIN_ABLE}, "t")
    served = resolve_architecture(arch, None, vllm_version="0.14.0", capability=A100)
    assert (served.quantization, served.quantization_flag) == ("gptq_marlin", None)


def test_log_informed_figures_name_the_logs_they_came_from() -> None:
    informed = log_informed()["mxfp4_hopper_swizzle_hidden_multiple"]
    assert informed.value == 256 and informed.informed_by
