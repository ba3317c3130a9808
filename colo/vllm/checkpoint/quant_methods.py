"""vLLM's quantization methods per release (quant_methods.yaml), and the method vLLM resolves for a checkpoint.

`resolve_quantization` mirrors `ModelConfig._verify_quantization` (vllm 0.8.0 config.py, vllm 0.11.0 and
0.33.0 config/model.py): the method comes from the checkpoint's quantization block; kernel overrides (GPTQ/AWQ
Marlin, AutoGPTQ/AutoAWQ, ModelOpt by algorithm, gpt-oss MXFP4) replace it; a `--quantization` that names
another method is refused with vLLM's message; without a block, a name that quantizes at load time (online)
applies to the full-precision checkpoint. Release ranges follow the same convention as colo.vllm.rules
(a release inside a range follows that range), kept apart because they reach back to 0.8.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from colo.catalog.data import parse_yaml
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.quantization import UNQUANTIZED, QuantGroup, QuantizationScheme, WeightFormat
from colo.vllm.rules import at_least, newest_range_from, release_key

METHODS_FILE = "quant_methods.yaml"
MARLIN_GROUP_SIZES = (-1, 0, 32, 64, 128)  # MARLIN_SUPPORTED_GROUP_SIZES (0: channelwise, read as -1)
GPTQ_ALIASES = ("gptq", "gptq_marlin", "auto_gptq", "marlin")
AWQ_ALIASES = ("awq", "awq_marlin", "auto_awq", "marlin")
OnlineFormat = Literal["fp8_tensor", "fp8_block", "fp8_channel", "bnb_nf4", "experts_int8", "int8_channel"]


class QuantMethodsFileError(Exception):
    """quant_methods.yaml does not match the fields declared here."""


class QuantizationRefused(ValueError):
    """vLLM would refuse this checkpoint or `--quantization`; the message is vLLM's (or says what vLLM does)."""


class _Range(BaseModel):
    """One range of quant_methods.yaml: only `first` is required; every other key changes the range before."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: str
    names_added: tuple[str, ...] = ()
    names_removed: tuple[str, ...] = ()
    deprecated: tuple[str, ...] | None = None
    gptq_kernel: Literal["gptq_marlin", "auto_gptq"] | None = None
    awq_kernel: Literal["awq_marlin", "auto_awq"] | None = None
    marlin_min_capability: int | None = None
    min_capability: dict[str, int] | None = None
    fp8_block_marlin: bool | None = None
    fp8_block_marlin_below: int | None = None
    modelopt_detected: bool | None = None
    hf_quant_config_read: bool | None = None
    text_config_detected: bool | None = None
    gpt_oss_mxfp4: bool | None = None
    gptq_symmetric_only: bool | None = None
    gptq_desc_act_refused: bool | None = None
    fp8_online_refused: bool | None = None
    fp8_expert_ignore: bool | None = None
    modelopt_fnmatch: bool | None = None
    ct_lm_head: bool | None = None
    modelopt_lm_head: bool | None = None
    online_methods: dict[str, OnlineFormat] | None = None
    kv_cache_dtypes: tuple[str, ...] | None = None
    kv_auto_follows_modelopt: bool | None = None
    torch: str | None = None
    triton_kernels_vendored: bool | None = None
    fp8_block_flashinfer: bool | None = None


@dataclass(frozen=True)
class QuantRelease:
    """Every quantization rule of one release range (fields documented in quant_methods.yaml)."""

    first: str
    names: tuple[str, ...]
    deprecated: tuple[str, ...]
    gptq_kernel: str
    awq_kernel: str
    marlin_min_capability: int
    min_capability: Mapping[str, int]
    fp8_block_marlin: bool
    fp8_block_marlin_below: int
    modelopt_detected: bool
    hf_quant_config_read: bool
    text_config_detected: bool
    gpt_oss_mxfp4: bool
    gptq_symmetric_only: bool
    gptq_desc_act_refused: bool
    fp8_online_refused: bool
    fp8_expert_ignore: bool
    modelopt_fnmatch: bool
    ct_lm_head: bool
    modelopt_lm_head: bool
    online_methods: Mapping[str, OnlineFormat]
    kv_cache_dtypes: tuple[str, ...]
    kv_auto_follows_modelopt: bool
    torch: str
    triton_kernels_vendored: bool
    fp8_block_flashinfer: bool

    def torch_at_least(self, wanted: str) -> bool:
        return at_least(self.torch, wanted)


def _fold(previous: dict[str, Any] | None, change: _Range) -> dict[str, Any]:
    state = dict(previous or {})
    names = [n for n in state.get("names", ()) if n not in change.names_removed]
    state["names"] = (*names, *(n for n in change.names_added if n not in names))
    state["first"] = change.first
    state["min_capability"] = {**state.get("min_capability", {}), **(change.min_capability or {})}
    skipped = {"first", "names_added", "names_removed", "min_capability"}
    for key, value in change.model_dump(exclude_none=True).items():
        if key not in skipped:
            state[key] = tuple(value) if isinstance(value, list) else value
    return state


def parse_releases(data: Mapping[str, Any]) -> tuple[QuantRelease, ...]:
    """Validate and fold quant_methods.yaml, oldest first; the first range must state every field."""
    state: dict[str, Any] | None = None
    folded: list[QuantRelease] = []
    for entry in data.get("releases") or ():
        try:
            change = _Range.model_validate(entry)
            state = _fold(state, change)
            folded.append(QuantRelease(**state))
        except ValidationError as exc:
            raise QuantMethodsFileError(f"{METHODS_FILE}, release {entry.get('first', '?')}: {exc}") from None
        except TypeError as exc:
            raise QuantMethodsFileError(f"{METHODS_FILE}, release {entry.get('first', '?')}: {exc}") from None
    if not folded:
        raise QuantMethodsFileError(f"{METHODS_FILE}: no releases")
    return tuple(sorted(folded, key=lambda r: release_key(r.first)))


class LogInformed(BaseModel):
    """A figure a public log informed (not read in a source); `informed_by` names the logs to leave unscored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: int
    informed_by: tuple[str, ...]
    why: str


@cache
def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = parse_yaml(
        resources.files("colo.vllm.checkpoint").joinpath(METHODS_FILE).read_text()
    )
    return loaded


@cache
def _releases() -> tuple[QuantRelease, ...]:
    return parse_releases(_data())


@cache
def log_informed() -> dict[str, LogInformed]:
    """Every log-informed figure of quant_methods.yaml, by name."""
    try:
        return {
            name: LogInformed.model_validate(entry)
            for name, entry in (_data().get("log_informed") or {}).items()
        }
    except ValidationError as exc:
        raise QuantMethodsFileError(f"{METHODS_FILE}, log_informed: {exc}") from None


def quant_release(version: str | None) -> QuantRelease:
    """The rules of `version` (None: the newest release colo knows)."""
    ranges = _releases()
    if version is None:
        return ranges[-1]
    return ranges[newest_range_from(version, [entry.first for entry in ranges])]


def quantization_names(version: str | None) -> tuple[str, ...]:
    """The names `--quantization` accepts in `version`."""
    return quant_release(version).names


def all_quantization_names() -> tuple[str, ...]:
    """Every name some release accepts, sorted: the choices of `colo estimate --quantization` and the stack key."""
    return tuple(sorted({name for entry in _releases() for name in entry.names}))


def all_kv_cache_dtypes() -> tuple[str, ...]:
    return tuple(sorted({name for entry in _releases() for name in entry.kv_cache_dtypes}))


def _release_where(holds: Any) -> str | None:
    return next((entry.first for entry in _releases() if holds(entry)), None)


def check_quantization_name(name: str, version: str | None) -> None:
    """vLLM's argparse refuses a name outside its choices; say when the release lost or has not yet got it."""
    release = quant_release(version)
    if name in release.names:
        return
    added = _release_where(lambda r: name in r.names)
    later = added is not None and release_key(added) > release_key(release.first)
    when = (
        f"added in {added}"
        if later
        else f"removed before {version}"
        if added
        else "no release colo knows has it"
    )
    raise QuantizationRefused(
        f"vLLM {version or release.first} has no quantization method '{name}' ({when}); "
        f"argparse refuses it: argument --quantization/-q: invalid choice: '{name}'"
    )


@dataclass(frozen=True)
class ResolvedQuantization:
    """What vLLM runs: its method name ("none" when unquantized) and the scheme the weights are sized from."""

    method: str
    scheme: QuantizationScheme
    release: QuantRelease


def _marlin_groups_ok(weights: WeightFormat) -> bool:
    group = weights.group_size if weights.strategy == "group" else -1
    return group in MARLIN_GROUP_SIZES


def _gptq_marlin_ok(scheme: QuantizationScheme, release: QuantRelease, capability: int) -> bool:
    """`GPTQMarlinConfig.is_gptq_marlin_compatible`: the four keys, (bits, sym) in {(4, T), (8, T)}, a Marlin
    group size, and a GPU Marlin supports."""
    weights = scheme.primary
    if weights is None or not scheme.marlin_keys_present:
        return False
    fits = (weights.bits, weights.symmetric) in ((4, True), (8, True)) and _marlin_groups_ok(weights)
    return fits and capability >= release.marlin_min_capability


def _awq_marlin_ok(scheme: QuantizationScheme, release: QuantRelease, capability: int) -> bool:
    """`AWQMarlinConfig.is_awq_marlin_compatible`: 4 bits, a Marlin group size, zero_point present."""
    weights = scheme.primary
    if weights is None or not scheme.marlin_keys_present:
        return False
    return weights.bits == 4 and _marlin_groups_ok(weights) and capability >= release.marlin_min_capability


def _gptq_override(
    scheme: QuantizationScheme, flag: str | None, release: QuantRelease, capability: int
) -> str | None:
    if release.gptq_kernel == "auto_gptq":  # AutoGPTQConfig.override_quantization_method (0.22+)
        return "auto_gptq" if flag is None or flag in GPTQ_ALIASES else None
    ok = flag in (None, "marlin", "gptq_marlin")
    return "gptq_marlin" if ok and _gptq_marlin_ok(scheme, release, capability) else None


def _awq_override(
    scheme: QuantizationScheme, flag: str | None, release: QuantRelease, capability: int
) -> str | None:
    if release.awq_kernel == "auto_awq":  # AutoAWQConfig.override_quantization_method (0.24+)
        return "auto_awq" if flag is None or flag in AWQ_ALIASES else None
    ok = flag in (None, "marlin", "awq_marlin")
    return "awq_marlin" if ok and _awq_marlin_ok(scheme, release, capability) else None


def _override(
    scheme: QuantizationScheme, flag: str | None, release: QuantRelease, ctx: _Context
) -> str | None:
    """The kernel override vLLM applies for this checkpoint, or None (the override list of the release)."""
    method = scheme.method
    if method == "gptq":
        return _gptq_override(scheme, flag, release, ctx.capability)
    if method == "awq":
        return _awq_override(scheme, flag, release, ctx.capability)
    if method.startswith("modelopt") and release.modelopt_detected:
        return method  # ModelOpt*Config.override_quantization_method: chosen by quant_algo
    if method == "mxfp4" and release.gpt_oss_mxfp4 and ctx.model_type == "gpt_oss":
        return "gpt_oss_mxfp4"
    return None


@dataclass(frozen=True)
class _Context:
    capability: int  # compute capability as vLLM compares it: major * 10 + minor
    model_type: str


def _mismatch(declared: str, flag: str) -> QuantizationRefused:
    return QuantizationRefused(
        "ValueError: Quantization method specified in the model config "
        f"({declared}) does not match the quantization method specified in the "
        f"`quantization` argument ({flag})."
    )


def _detected(scheme: QuantizationScheme, release: QuantRelease) -> bool:
    """Whether vLLM finds the block without being told (a.1 of the quantization notes)."""
    if scheme.declared_in == "hf_quant_config.json":
        return release.hf_quant_config_read
    if scheme.declared_in == "quantize_config.json":
        return False
    if scheme.declared_in == "text_config":
        return release.text_config_detected
    return True


def _from_block(scheme: QuantizationScheme, flag: str | None, release: QuantRelease, ctx: _Context) -> str:
    declared = scheme.method
    if declared == "modelopt_fp4" and "nvfp4" in release.names:
        declared = "nvfp4"  # its name before 0.9.0
    override = _override(scheme, flag, release, ctx)
    if override is not None:
        return override
    if flag is None:
        return declared
    if flag != declared:
        raise _mismatch(declared, flag)
    return flag


def _undetected(scheme: QuantizationScheme, flag: str | None, release: QuantRelease) -> str:
    """A block in a side file vLLM reads only once `--quantization` names the method."""
    if flag is None:
        raise QuantizationRefused(
            f"vLLM {release.first} does not read {scheme.declared_in} on its own: without --quantization it "
            f"loads the checkpoint as unquantized and fails on its packed tensors; set quantization to "
            f"'{scheme.method}'"
        )
    return flag


def _refuse_release_rules(method: str, scheme: QuantizationScheme, release: QuantRelease) -> None:
    weights = scheme.primary
    if method in ("auto_gptq",) and weights is not None:
        if release.gptq_symmetric_only and (weights.bits, weights.symmetric) not in ((4, True), (8, True)):
            raise QuantizationRefused(
                f"ValueError: Unsupported quantization config: bits={weights.bits}, sym={weights.symmetric}"
            )
        if release.gptq_desc_act_refused and weights.act_order:
            raise QuantizationRefused(
                "ValueError: GPTQ group activation ordering (desc_act=True) is no longer supported. Use a "
                "checkpoint with static activation ordering or desc_act=False."
            )
    if method in release.deprecated:
        raise QuantizationRefused(
            f"ValueError: The quantization method {method} is deprecated and will be removed in future "
            "versions of vLLM. To bypass, set `--allow-deprecated-quantization`."
        )


def _refuse_capability(method: str, release: QuantRelease, capability: int) -> None:
    needed = release.min_capability.get(method)
    if needed is not None and capability < needed:
        raise QuantizationRefused(
            f"ValueError: The quantization method {method} is not supported for the current GPU. Minimum "
            f"capability: {needed}. Current capability: {capability}."
        )


ONLINE_FORMATS: dict[str, tuple[tuple[str, ...], WeightFormat]] = {
    # Linear layers and fused experts quantized at load; embeddings and lm_head stay in the model dtype.
    "fp8_tensor": (("Linear", "experts"), WeightFormat("fp8", 8, "tensor", weight_only=False)),
    "fp8_block": (
        ("Linear", "experts"),
        WeightFormat("fp8", 8, "block", block=(128, 128), weight_only=False),
    ),
    "fp8_channel": (("Linear", "experts"), WeightFormat("fp8", 8, "channel", weight_only=False)),
    # bitsandbytes in flight: quantize_4bit(nf4, compress_statistics) then de-quantized statistics (fp32 absmax / 64)
    "bnb_nf4": (("Linear",), WeightFormat("bnb", 4, "group", 64)),
    # experts_int8 / int8 weight-only: int8 with an fp32 scale per output row.
    "experts_int8": (("experts",), WeightFormat("int", 8, "channel")),
    "int8_channel": (("Linear",), WeightFormat("int", 8, "channel")),
}


def _online(flag: str, release: QuantRelease) -> ResolvedQuantization:
    if flag == "fp8" and release.fp8_online_refused:
        raise QuantizationRefused(
            "ValueError: The `fp8` quantization method no longer supports online quantization. Please use "
            "`--quantization fp8_per_tensor` instead. See "
            "https://docs.vllm.ai/en/stable/features/quantization/online/"
        )
    fmt = release.online_methods.get(flag)
    if fmt is None:
        raise QuantizationRefused(
            f"--quantization {flag} on a checkpoint without a quantization block: vLLM needs that method's "
            f"config file and stops ('ValueError: Cannot find the config file for {flag}'), or quantizes in a "
            f"way colo does not size"
        )
    targets, weights = ONLINE_FORMATS[fmt]
    scheme = QuantizationScheme(flag, groups=(QuantGroup(targets, weights),), ignore_rule="none", online=True)
    return ResolvedQuantization(flag, scheme, release)


def resolve_quantization(
    scheme: QuantizationScheme,
    flag: str | None,
    *,
    vllm_version: str | None,
    capability: tuple[int, int] | None = None,
    model_type: str = "",
) -> ResolvedQuantization:
    """The method vLLM `vllm_version` runs for this checkpoint on a GPU of `capability` (None: a GPU with
    native FP8, 9.0), with `--quantization flag` (None: not given). Raises QuantizationRefused with vLLM's text."""
    release = quant_release(vllm_version)
    if flag is not None:
        check_quantization_name(flag, vllm_version)
    major, minor = capability or (9, 0)
    ctx = _Context(major * 10 + minor, model_type)
    if not scheme.quantized:
        if flag is None:
            return ResolvedQuantization("none", UNQUANTIZED, release)
        resolved = _online(flag, release)
        _refuse_capability(resolved.method, release, ctx.capability)
        return resolved
    if _detected(scheme, release):
        method = _from_block(scheme, flag, release, ctx)
    else:
        method = _undetected(scheme, flag, release)
    _refuse_release_rules(method, scheme, release)
    _refuse_capability(method, release, ctx.capability)
    return ResolvedQuantization(method, replace(scheme, method=method), release)


def resolve_architecture(
    arch: ModelArchitecture,
    flag: str | None,
    *,
    vllm_version: str | None,
    capability: tuple[int, int] | None = None,
) -> ModelArchitecture:
    """`arch` as vLLM `vllm_version` serves it with `--quantization flag`: `quantization` becomes the method vLLM
    resolves; a ModelOpt kv_cache_quant_algo steers `kv_cache_dtype auto` only where the release does so.
    Raises QuantizationRefused with vLLM's message where vLLM refuses."""
    resolved = resolve_quantization(
        arch.quant_scheme, flag, vllm_version=vllm_version, capability=capability, model_type=arch.model_type
    )
    scheme = arch.quant_scheme
    if not resolved.release.kv_auto_follows_modelopt:
        scheme = replace(scheme, kv_cache_quant_algo="")
    return replace(arch, quantization=resolved.method, quantization_flag=flag, quant_scheme=scheme)
