"""Read a quantization block (config.json `quantization_config`, hf_quant_config.json, quantize_config.json) into
a QuantizationScheme, one reader per method, each mirroring that method's `from_config` in vLLM.

Sources (`vllm <version> path::function`): fp8 `vllm 0.14.0 model_executor/layers/quantization/fp8.py::
Fp8Config.from_config`; compressed-tensors `…/compressed_tensors/compressed_tensors.py::CompressedTensorsConfig.
_get_scheme_from_parts`; AWQ `…/awq_marlin.py::AWQMarlinConfig.from_config`; GPTQ `…/gptq_marlin.py::GPTQMarlinConfig.
from_config`; ModelOpt `vllm 0.33.0 transformers_utils/model_arch_config_convertor.py::_normalize_quantization_config`
and `…/modelopt.py::ModelOptQuantConfigBase`; bitsandbytes `vllm 0.14.0 …/bitsandbytes.py::BitsAndBytesConfig`;
MXFP4 `vllm 0.14.0 …/mxfp4.py::Mxfp4Config`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from colo.vllm.checkpoint.quantization import (
    UNQUANTIZED,
    DeclaredIn,
    GptqDynamicRule,
    QuantGroup,
    QuantizationScheme,
    WeightFormat,
)

EVERY_LAYER = ("*",)
FP8_TENSOR = WeightFormat("fp8", 8, "tensor", weight_only=False)


class QuantConfigError(ValueError):
    """The block names a layout vLLM itself refuses; the message is vLLM's."""


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()


def _int_strategy(group_size: Any) -> tuple[str, int]:
    """GPTQ/AWQ `group_size`: -1 (or none) means one scale per output row over the whole input."""
    group = int(group_size) if group_size is not None else -1
    return ("group", group) if group > 0 else ("channel", 0)


def _fp8(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    # Every release 0.8.0-0.34.0 reads it with get_from_keys, which raises when it is absent
    # (vllm 0.33.0 model_executor/layers/quantization/fp8.py::Fp8Config.from_config, base_config.py::get_from_keys).
    if "activation_scheme" not in qc:
        raise QuantConfigError(
            "ValueError: Cannot find any of ['activation_scheme'] in the model's quantization config."
        )
    block = qc.get("weight_block_size")
    weights = (
        WeightFormat("fp8", 8, "block", block=(int(block[0]), int(block[1])), weight_only=False)
        if block
        else FP8_TENSOR
    )
    # `ignored_layers`, or `modules_to_not_convert` when that is empty (vLLM 0.10.1+).
    ignore = _strs(qc.get("ignored_layers")) or _strs(qc.get("modules_to_not_convert"))
    return QuantizationScheme("fp8", declared_in, (QuantGroup(EVERY_LAYER, weights),), ignore, "exact")


def _fbgemm_fp8(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    weights = WeightFormat("fp8", 8, "channel", weight_only=False)
    ignore = _strs(qc.get("modules_to_not_convert"))
    return QuantizationScheme("fbgemm_fp8", declared_in, (QuantGroup(EVERY_LAYER, weights),), ignore, "exact")


def _ct_float(weights: Mapping[str, Any], weight_only: bool) -> WeightFormat:
    bits = int(weights.get("num_bits") or 8)
    group = int(weights.get("group_size") or 0)
    if bits == 4:
        # NVFP4 (one fp8 scale per 16) or MXFP4 (one e8m0 scale per 32).
        return WeightFormat(
            "nvfp4" if group == 16 else "mxfp4", 4, "group", group or 16, weight_only=weight_only
        )
    strategy = str(weights.get("strategy") or "tensor")
    if strategy == "block":
        rows, cols = weights.get("block_structure") or (128, 128)
        return WeightFormat("fp8", 8, "block", block=(int(rows), int(cols)), weight_only=weight_only)
    if strategy == "group" and group == 32:
        return WeightFormat("mxfp8", 8, "group", 32, weight_only=weight_only)
    return WeightFormat("fp8", 8, "channel" if strategy == "channel" else "tensor", weight_only=weight_only)


def _ct_int(weights: Mapping[str, Any], weight_only: bool) -> WeightFormat:
    strategy = str(weights.get("strategy") or "channel")
    group = int(weights.get("group_size") or 0)
    return WeightFormat(
        "int",
        int(weights.get("num_bits") or 8),
        "group" if strategy == "group" and group > 0 else "tensor" if strategy == "tensor" else "channel",
        group if strategy == "group" else 0,
        symmetric=bool(weights.get("symmetric", True)),
        act_order=weights.get("actorder") == "group",
        weight_only=weight_only,
    )


def _ct_format(group_cfg: Mapping[str, Any]) -> WeightFormat:
    """`_get_scheme_from_parts`: the weight type and bits pick the scheme; absent input activations make it
    weight-only (W4A16/W8A16)."""
    weights = group_cfg.get("weights") or {}
    weight_only = not group_cfg.get("input_activations")
    if weights.get("type") == "float":
        return _ct_float(weights, weight_only)
    return _ct_int(weights, weight_only)


def _compressed_tensors(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    groups = tuple(
        QuantGroup(_strs(group.get("targets")) or ("Linear",), _ct_format(group))
        for group in (qc.get("config_groups") or {}).values()
        if isinstance(group, Mapping)
    )
    return QuantizationScheme(
        "compressed-tensors", declared_in, groups, _strs(qc.get("ignore")), "compressed_tensors"
    )


def _awq(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    strategy, group = _int_strategy(qc.get("group_size", qc.get("q_group_size")))
    weights = WeightFormat(
        "int",
        int(qc.get("bits", qc.get("w_bit", 4))),
        "group" if strategy == "group" else "channel",
        group,
        symmetric=not qc.get("zero_point", True),
    )
    return QuantizationScheme(
        "awq",
        declared_in,
        (QuantGroup(EVERY_LAYER, weights),),
        _strs(qc.get("modules_to_not_convert")),
        "substring",
        marlin_keys_present=qc.get("zero_point") is not None,
        lm_head_quantized=bool(qc.get("lm_head", False)),
    )


def _dynamic_rules(dynamic: Any) -> tuple[GptqDynamicRule, ...]:
    if not isinstance(dynamic, Mapping):
        return ()
    rules = []
    for key, overrides in dynamic.items():
        pattern = str(key)
        skip = pattern.startswith("-:")
        body = overrides if isinstance(overrides, Mapping) else {}
        rules.append(
            GptqDynamicRule(
                pattern.removeprefix("-:").removeprefix("+:"),
                skip,
                bits=body.get("bits"),
                group_size=body.get("group_size"),
                desc_act=body.get("desc_act"),
                sym=body.get("sym"),
            )
        )
    return tuple(rules)


def _flatten(modules: Any) -> tuple[str, ...] | None:
    if not isinstance(modules, list):
        return None
    flat: list[str] = []
    for item in modules:
        flat += [str(name) for name in item] if isinstance(item, list) else [str(item)]
    return tuple(flat)


def _gptq(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    strategy, group = _int_strategy(qc.get("group_size"))
    weights = WeightFormat(
        "int",
        int(qc.get("bits", 4)),
        "group" if strategy == "group" else "channel",
        group,
        symmetric=bool(qc.get("sym", True)),
        # desc_act with one group per row orders nothing (vllm 0.30.0 …/gptq_utils.py::normalize_and_validate_gptq_desc_act)
        act_order=bool(qc.get("desc_act", False)) and strategy == "group",
    )
    keys = ("bits", "group_size", "sym", "desc_act")
    return QuantizationScheme(
        "gptq",
        declared_in,
        (QuantGroup(EVERY_LAYER, weights),),
        ignore_rule="none",
        marlin_keys_present=all(qc.get(key) is not None for key in keys),
        lm_head_quantized=bool(qc.get("lm_head", False)),
        dynamic=_dynamic_rules(qc.get("dynamic")),
        modules_in_block_to_quantize=_flatten(qc.get("modules_in_block_to_quantize")),
    )


def _auto_round(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    """Intel AutoRound: vLLM's `inc` (auto-round before 0.16) hands int4/int8 layers to the GPTQ or AWQ Marlin
    path by `packing_format`; sizes are those formats'."""
    gptq = _gptq({**qc, "desc_act": False}, declared_in)
    awq_packed = "awq" in str(qc.get("packing_format", ""))
    weights = gptq.groups[0].weights
    if awq_packed:
        weights = WeightFormat("int", weights.bits, weights.strategy, weights.group_size, symmetric=False)
    return QuantizationScheme(
        str(qc.get("quant_method", "auto-round")).lower(),
        declared_in,
        (QuantGroup(EVERY_LAYER, weights),),
        _strs(qc.get("extra_config_skip")),
        "substring",
        marlin_keys_present=True,
    )


MODELOPT_FORMATS = {
    "FP8": WeightFormat("fp8", 8, "tensor", weight_only=False),
    "FP8_PER_CHANNEL_PER_TOKEN": WeightFormat("fp8", 8, "channel", weight_only=False),
    "FP8_PB_WO": WeightFormat("fp8", 8, "block", block=(128, 128)),
    "NVFP4": WeightFormat("nvfp4", 4, "group", 16, weight_only=False),
    "W4A16_NVFP4": WeightFormat("nvfp4", 4, "group", 16),
    "MXFP8": WeightFormat("mxfp8", 8, "group", 32, weight_only=False),
}
MODELOPT_METHODS = {
    "FP8": "modelopt",
    "FP8_PER_CHANNEL_PER_TOKEN": "modelopt",
    "FP8_PB_WO": "modelopt",
    "NVFP4": "modelopt_fp4",
    "W4A16_NVFP4": "modelopt_fp4",
    "MXFP8": "modelopt_mxfp8",
    "MIXED_PRECISION": "modelopt_mixed",
}


def _modelopt_mixed_groups(quantized_layers: Any) -> tuple[QuantGroup, ...]:
    """MIXED_PRECISION names each quantized layer with its own algorithm."""
    if not isinstance(quantized_layers, Mapping):
        return ()
    by_algo: dict[str, list[str]] = {}
    for layer, spec in quantized_layers.items():
        algo = str(spec.get("quant_algo", "")).upper() if isinstance(spec, Mapping) else ""
        by_algo.setdefault(algo, []).append(str(layer))
    return tuple(
        QuantGroup(tuple(layers), MODELOPT_FORMATS[algo])
        for algo, layers in by_algo.items()
        if algo in MODELOPT_FORMATS
    )


def _modelopt(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    """hf_quant_config.json nests the keys under `quantization`; config.json blocks carry them flat."""
    body = qc.get("quantization") if isinstance(qc.get("quantization"), Mapping) else qc
    assert isinstance(body, Mapping)
    algo = str(body.get("quant_algo") or "").upper()
    if algo not in MODELOPT_METHODS:
        raise QuantConfigError(f"ValueError: Unknown ModelOpt quant algo: {body.get('quant_algo')}")
    if algo == "MIXED_PRECISION":
        groups = _modelopt_mixed_groups(body.get("quantized_layers") or qc.get("quantized_layers"))
    else:
        weights = MODELOPT_FORMATS[algo]
        group = int(body.get("group_size") or weights.group_size)
        if weights.kind == "nvfp4":
            weights = WeightFormat("nvfp4", 4, "group", group, weight_only=weights.weight_only)
        groups = (QuantGroup(EVERY_LAYER, weights),)
    return QuantizationScheme(
        MODELOPT_METHODS[algo],
        declared_in,
        groups,
        _strs(body.get("exclude_modules")) or _strs(body.get("ignore")),
        "modelopt",
        quant_algo=algo,
        kv_cache_quant_algo=str(body.get("kv_cache_quant_algo") or ""),
    )


def _bitsandbytes(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    four_bit = bool(qc.get("load_in_4bit", not qc.get("load_in_8bit", False)))
    weights = WeightFormat(
        "bnb",
        4 if four_bit else 8,
        "group" if four_bit else "channel",
        64 if four_bit else 0,  # bitsandbytes' default 4-bit blocksize
        double_quant=four_bit and bool(qc.get("bnb_4bit_use_double_quant", False)),
    )
    return QuantizationScheme(
        "bitsandbytes",
        declared_in,
        (QuantGroup(EVERY_LAYER, weights),),
        _strs(qc.get("llm_int8_skip_modules")),
        "bitsandbytes",
    )


def _mxfp4(qc: Mapping[str, Any], declared_in: DeclaredIn) -> QuantizationScheme:
    """gpt-oss: every fused-MoE layer is MXFP4 and every linear layer stays in the model dtype, whatever
    `modules_to_not_convert` says (`Mxfp4Config.get_quant_method`)."""
    weights = WeightFormat("mxfp4", 4, "group", 32)
    return QuantizationScheme(
        "mxfp4",
        declared_in,
        (QuantGroup(("experts",), weights),),
        _strs(qc.get("modules_to_not_convert")),
        "every_linear",
    )


READERS: dict[str, Callable[[Mapping[str, Any], DeclaredIn], QuantizationScheme]] = {
    "fp8": _fp8,
    "fbgemm_fp8": _fbgemm_fp8,
    "compressed-tensors": _compressed_tensors,
    "awq": _awq,
    "awq_marlin": _awq,
    "gptq": _gptq,
    "gptq_marlin": _gptq,
    "auto-round": _auto_round,
    "auto_round": _auto_round,
    "inc": _auto_round,
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
    "bitsandbytes": _bitsandbytes,
    "mxfp4": _mxfp4,
}


def normalized_method(qc: Mapping[str, Any]) -> str:
    """`quant_method` lower-cased with vLLM's spelling of compressed-tensors; ModelOpt exports name their
    producer instead (`vllm 0.10.1 config.py::ModelConfig._parse_quant_hf_config`)."""
    producer = qc.get("producer")
    if isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        return "modelopt"
    method = str(qc.get("quant_method") or "").lower().replace("compressed_tensors", "compressed-tensors")
    return "modelopt" if method.startswith("modelopt") else method


def read_quantization(
    qc: Mapping[str, Any] | None, declared_in: DeclaredIn = "config.json"
) -> QuantizationScheme:
    """The scheme of one quantization block; a method colo has no reader for keeps its name and no formats,
    so the resolver can name it (vLLM accepts it, colo cannot size it)."""
    if not qc:
        return UNQUANTIZED
    method = normalized_method(qc)
    reader = READERS.get(method)
    if reader is None:
        return QuantizationScheme(method or "unknown", declared_in)
    return reader(qc, declared_in)
