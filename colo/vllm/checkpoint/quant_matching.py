"""Which weight format each vLLM module gets: every method has its own rule for its ignore list and targets.

A module is named by its vLLM prefix (`model.layers.3.self_attn.qkv_proj`); a fused module also lists the
checkpoint names of its shards (`…q_proj`, `…k_proj`, `…v_proj`), which vLLM matches one by one. Sources:
fp8 `vllm 0.14.0 model_executor/layers/quantization/utils/quant_utils.py::is_layer_skipped` (exact, shards
must agree; fused-MoE by "experts" entries from 0.11.0); compressed-tensors `…/compressed_tensors/utils.py::
should_ignore_layer`, `find_matched_target` (exact or `re:` match, else the module class name containing a
target); AWQ `vllm 0.8.0 …/awq.py::is_layer_skipped_awq` (substring); GPTQ `…/utils/gptq_utils.py::
get_dynamic_override`, `is_layer_gptq_quantized`; ModelOpt `vllm 0.33.0 …/modelopt.py::is_layer_excluded`
(exact, substring, fnmatch from 0.12.0; vision towers never quantized); bitsandbytes `vllm 0.14.0 …/bitsandbytes.py::
is_layer_skipped_bnb` (a dotted component or leading prefix); MXFP4 `…/mxfp4.py::Mxfp4Config.get_quant_method`.

Multimodal checkpoints name the language model `model.language_model.*` (HF) where vLLM says
`language_model.model.*`; vLLM maps the lists with its `hf_to_vllm_mapper` (from 0.10 for fp8 and
compressed-tensors, 0.11 ModelOpt, 0.14 AWQ). colo names modules `model.layers.*` and maps both spellings to it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

from colo.vllm.checkpoint.quant_methods import QuantRelease
from colo.vllm.checkpoint.quantization import GptqDynamicRule, QuantizationScheme, WeightFormat

ModuleKind = Literal["linear", "experts", "lm_head"]
LANGUAGE_MODEL_SPELLINGS = ("model.language_model.", "language_model.model.", "language_model.")
VISION_PREFIXES = ("vision_tower", "vision_model", "vit_large_projector", "visual")


@dataclass(frozen=True)
class ModuleRef:
    """One quantizable vLLM module: its prefix, what kind of layer it is, and its checkpoint shards if fused."""

    prefix: str
    kind: ModuleKind = "linear"
    shards: tuple[str, ...] = ()
    class_name: str = "Linear"  # vLLM's layer class contains this (QKVParallelLinear, RowParallelLinear, …)


class FusedShardsDisagree(ValueError):
    """vLLM refuses a fused layer whose shards have different precisions."""


def text_name(name: str) -> str:
    """A module name in colo's spelling: the language model of a multimodal checkpoint is `model.*`."""
    for spelling in LANGUAGE_MODEL_SPELLINGS:
        if name.startswith(spelling):
            return (
                "model." + name[len(spelling) :] if spelling != "language_model." else name[len(spelling) :]
            )
    return name


def _names(module: ModuleRef) -> tuple[str, ...]:
    return module.shards or (module.prefix,)


def _agree(module: ModuleRef, matches: list[bool]) -> bool:
    if len(set(matches)) > 1:
        raise FusedShardsDisagree(
            f"ValueError: Detected some but not all shards of {module.prefix} are quantized. All shards of "
            "fused layers to have the same precision."
        )
    return matches[0]


def _exact_skipped(scheme: QuantizationScheme, module: ModuleRef, release: QuantRelease) -> bool:
    ignore = _normalized(scheme.ignore)
    if module.kind == "experts":
        if not release.fp8_expert_ignore:
            return False
        return any(module.prefix in entry for entry in ignore if "experts" in entry)
    if module.prefix in ignore:
        return True
    return _agree(module, [name in ignore for name in _names(module)])


@cache
def _normalized(entries: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(text_name(entry) for entry in entries)


def _regex_or_equal(name: str, target: str) -> bool:
    if target.startswith("re:"):
        return re.match(text_name(target[3:]), name) is not None or re.match(target[3:], name) is not None
    return name == target


def _ct_ignored(scheme: QuantizationScheme, module: ModuleRef) -> bool:
    ignore = _normalized(scheme.ignore)
    if any(_regex_or_equal(module.prefix, entry) for entry in ignore):
        return True
    return _agree(module, [any(_regex_or_equal(name, entry) for entry in ignore) for name in _names(module)])


def _ct_format(scheme: QuantizationScheme, module: ModuleRef) -> WeightFormat | None:
    """`find_matched_target`: the layer name, then the class name, then every fused shard, against each target."""
    name = f"{module.prefix}.0.gate_proj" if module.kind == "experts" else module.prefix
    pairs = [(text_name(target), group.weights) for group in scheme.groups for target in group.targets]
    for target, weights in pairs:
        if _regex_or_equal(name, target):
            return weights
    if module.kind != "lm_head":
        for target, weights in pairs:
            if not target.startswith("re:") and target.lower() in module.class_name.lower():
                return weights
    if module.shards:
        for target, weights in pairs:
            if all(_regex_or_equal(shard, target) for shard in module.shards):
                return weights
    return None


def _substring_skipped(scheme: QuantizationScheme, module: ModuleRef) -> bool:
    ignore = _normalized(scheme.ignore)
    return any(entry in name for entry in ignore for name in (module.prefix, *module.shards))


def _gptq_rule(rules: tuple[GptqDynamicRule, ...], prefix: str) -> GptqDynamicRule | None:
    return next((rule for rule in rules if re.match(rule.pattern, prefix)), None)


def _gptq_listed(scheme: QuantizationScheme, module: ModuleRef) -> bool:
    """`modules_in_block_to_quantize` (substring, shards must agree); without it every layer is quantized."""
    listed = scheme.modules_in_block_to_quantize
    if listed is None or module.kind == "experts":
        return True
    entries = _normalized(listed)
    return _agree(module, [any(entry in name for entry in entries) for name in _names(module)])


def _gptq_overridden(base: WeightFormat, rule: GptqDynamicRule) -> WeightFormat:
    group = base.group_size if rule.group_size is None else int(rule.group_size)
    return WeightFormat(
        "int",
        base.bits if rule.bits is None else int(rule.bits),
        "group" if group > 0 else "channel",
        max(group, 0),
        symmetric=base.symmetric if rule.sym is None else bool(rule.sym),
        act_order=(base.act_order if rule.desc_act is None else bool(rule.desc_act)) and group > 0,
    )


def _gptq_format(scheme: QuantizationScheme, module: ModuleRef) -> WeightFormat | None:
    """GPTQModel `dynamic` rules first (first match wins; `-:` skips), then `modules_in_block_to_quantize`."""
    base = scheme.primary
    rule = _gptq_rule(scheme.dynamic, module.prefix)
    if base is None or (rule is not None and rule.skip) or not _gptq_listed(scheme, module):
        return None
    return base if rule is None else _gptq_overridden(base, rule)


def _modelopt_excluded(scheme: QuantizationScheme, module: ModuleRef, release: QuantRelease) -> bool:
    if any(part in module.prefix for part in VISION_PREFIXES):
        return True
    ignore = _normalized(scheme.ignore)
    names = (module.prefix, *module.shards)
    if any(name in ignore for name in names):
        return True
    if any(entry in name for entry in ignore for name in names if "*" not in entry):
        return True
    if release.modelopt_fnmatch:
        return any(fnmatch.fnmatch(name, entry) for entry in ignore for name in names if "*" in entry)
    return False


def _modelopt_format(
    scheme: QuantizationScheme, module: ModuleRef, release: QuantRelease
) -> WeightFormat | None:
    if _modelopt_excluded(scheme, module, release):
        return None
    if scheme.method != "modelopt_mixed":
        return scheme.primary
    for group in scheme.groups:
        targets = _normalized(group.targets)
        if module.prefix in targets or (module.shards and all(s in targets for s in module.shards)):
            return group.weights
    return None


def _bnb_skipped(scheme: QuantizationScheme, module: ModuleRef) -> bool:
    components = module.prefix.split(".")
    leading = {".".join(components[: i + 1]) for i in range(len(components))}
    return any(entry in components or entry in leading for entry in _normalized(scheme.ignore))


def _lm_head_quantized(scheme: QuantizationScheme, release: QuantRelease) -> bool:
    """lm_head is a ParallelLMHead, not a LinearBase: only some methods quantize it, some only from a release."""
    method = scheme.method
    if method.startswith(("gptq", "auto_gptq", "awq", "auto_awq")):
        return scheme.lm_head_quantized
    if method == "compressed-tensors":
        return release.ct_lm_head
    if method.startswith("modelopt"):
        return release.modelopt_lm_head
    return False


def module_format(
    scheme: QuantizationScheme, module: ModuleRef, release: QuantRelease
) -> WeightFormat | None:
    """The format vLLM gives `module` under the (resolved) scheme; None: it stays in the model dtype."""
    if not scheme.quantized or not scheme.groups:
        return None
    if module.kind == "lm_head" and not _lm_head_quantized(scheme, release):
        return None
    rule = scheme.ignore_rule
    if scheme.online:
        return _online_format(scheme, module)
    if rule == "every_linear":
        return scheme.primary if module.kind == "experts" else None
    if rule == "compressed_tensors":
        return None if _ct_ignored(scheme, module) else _ct_format(scheme, module)
    if rule == "modelopt":
        return _modelopt_format(scheme, module, release)
    if scheme.method.startswith(("gptq", "auto_gptq")):
        return _gptq_format(scheme, module)
    skipped = {
        "exact": lambda: _exact_skipped(scheme, module, release),
        "substring": lambda: _substring_skipped(scheme, module),
        "bitsandbytes": lambda: _bnb_skipped(scheme, module),
    }.get(rule, lambda: False)()
    return None if skipped else scheme.primary


def _online_format(scheme: QuantizationScheme, module: ModuleRef) -> WeightFormat | None:
    if module.kind == "lm_head":
        return None
    for group in scheme.groups:
        if ("experts" if module.kind == "experts" else "Linear") in group.targets:
            return group.weights
    return None
