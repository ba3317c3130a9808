"""The dtype vLLM runs a model in (`--dtype`), release by release, and what it refuses about it.

`ModelConfig` resolves it once, in `_get_and_verify_dtype` (vllm 0.8.0 config.py, 0.10.x config/__init__.py,
0.11.0 .. 0.33.0 config/model.py): it looks the checkpoint's dtype up in the config (`rules.dtype_config_keys`,
float32 where none states one); an explicit `--dtype` is taken as given; `auto` keeps the checkpoint's dtype,
except that a float32 checkpoint is cast down (`rules.dtype_float32_auto`) and, from 0.9.0, a dtype the GPU
lacks falls back to one it has (`rules.dtype_auto_fallback`; `platforms/cuda.py::supported_dtypes`). Every
tensor vLLM then allocates for the model takes that dtype (`set_default_torch_dtype` while it builds the model):
the unquantized weights and the scales of quantized ones, the rotary cache, the vision tower, activations, the
KV cache's and the recurrent state's `auto` dtype.

Refused in vLLM's words: float16 for the model types `_FLOAT16_NOT_SUPPORTED_MODELS` lists (0.9.1+,
`_check_valid_dtype`), and bfloat16 on a GPU below compute capability 8.0, which the worker checks when it
starts (`v1/worker/gpu_worker.py::_check_if_gpu_supports_dtype` to 0.10.1.1, then
`platforms/cuda.py::CudaPlatformBase.check_if_supports_dtype`, the same text in every release).
"""

from __future__ import annotations

from colo.catalog import GpuSpec
from colo.vllm.checkpoint.architecture import ConfigDtypes, ModelArchitecture
from colo.vllm.rules import DtypeKey, VllmRules

# vllm 0.8.0 .. 0.33.0 config _STR_DTYPE_TO_TORCH_DTYPE: the names --dtype takes, as the dtypes they mean.
DTYPE_ALIASES = {
    "half": "float16",
    "float16": "float16",
    "float": "float32",
    "float32": "float32",
    "bfloat16": "bfloat16",
}
# The model_type transformers writes for the architectures vLLM's dtype rules name (transformers 4.57.1
# models/gemma2/configuration_gemma2.py Gemma2Config, gemma3/configuration_gemma3.py Gemma3Config and
# Gemma3TextConfig, glm4/configuration_glm4.py Glm4Config), for configs that carry no model_type of their
# own (colo's catalog keeps only the keys the budget reads): (top level, text config).
ARCHITECTURE_MODEL_TYPES = {
    "Gemma2ForCausalLM": ("gemma2", "gemma2"),
    "Gemma3ForCausalLM": ("gemma3_text", "gemma3_text"),
    "Gemma3ForConditionalGeneration": ("gemma3", "gemma3_text"),
    "Glm4ForCausalLM": ("glm4", "glm4"),
}
GEMMA_BFLOAT16 = ("gemma2", "gemma3", "gemma3_text")  # vllm 0.8.0 config.py::_get_and_verify_dtype
FLOAT16_REFUSAL_REASON = "Numerical instability. Please use bfloat16 or float32 instead."


def platform_dtypes(capability: tuple[int, int]) -> tuple[str, ...]:
    """`platforms/cuda.py::CudaPlatformBase.supported_dtypes` (0.9.0 .. 0.33.0), first the fallback."""
    major, minor = capability
    if major * 10 + minor >= 80:
        return ("bfloat16", "float16", "float32")
    if major * 10 + minor >= 60:
        return ("float16", "float32")
    return ("float32",)


def _dtypes(arch: ModelArchitecture) -> ConfigDtypes:
    """The config's dtype keys; a geometry built by hand states only its own dtype."""
    return arch.config_dtypes or ConfigDtypes(
        root=arch.checkpoint_dtype or arch.dtype, model_type=arch.model_type
    )


def model_type(arch: ModelArchitecture, rules: VllmRules) -> str:
    """The model_type the release's dtype rules compare: hf_config's, or hf_text_config's in 0.8.0."""
    keys = _dtypes(arch)
    top, text = ARCHITECTURE_MODEL_TYPES.get(arch.architecture, ("", ""))
    if rules.dtype_model_type == "text":
        return keys.text_model_type or keys.model_type or text
    return keys.model_type or top


def _key(keys: ConfigDtypes, key: DtypeKey) -> str | None:
    if key == "text":  # get_text_config() is the config itself where it has no text_config
        return keys.text if keys.has_text_config else keys.root
    value: str | None = getattr(keys, key)
    return value


def checkpoint_dtype(arch: ModelArchitecture, rules: VllmRules) -> str:
    """The dtype vLLM reads for the checkpoint: the first of the release's keys that states one, else float32."""
    keys = _dtypes(arch)
    for key in rules.dtype_config_keys:
        value = _key(keys, key)
        if value:
            return value
    return "float32"


def _preferred(rules: VllmRules, kind: str, capability: tuple[int, int], *, pooling: bool) -> str:
    """`_resolve_auto_dtype`'s preferred dtype: float16 for pooling models, else the first the platform
    supports and the model type allows."""
    refused = kind in rules.float16_refused_model_types
    supported = [d for d in platform_dtypes(capability) if not (refused and d == "float16")]
    return "float16" if pooling and "float16" in supported else supported[0]


def _auto(rules: VllmRules, config: str, kind: str, capability: tuple[int, int], *, pooling: bool) -> str:
    if rules.dtype_float32_auto == "platform_preferred":  # 0.9.1+
        preferred = _preferred(rules, kind, capability, pooling=pooling)
        wanted = preferred if config == "float32" else config
        refused = kind in rules.float16_refused_model_types
        supported = [d for d in platform_dtypes(capability) if not (refused and d == "float16")]
        return wanted if wanted in supported else preferred
    wanted = config
    if config == "float32":
        gemma = rules.dtype_float32_auto == "float16_gemma_bfloat16" and kind in GEMMA_BFLOAT16
        wanted = "bfloat16" if gemma else "float16"
    if kind in rules.dtype_auto_bfloat16_model_types:
        wanted = "bfloat16"
    if rules.dtype_auto_fallback == "first_supported" and wanted not in platform_dtypes(capability):
        return platform_dtypes(capability)[0]
    return wanted


def resolve_dtype(
    arch: ModelArchitecture,
    flag: str | None,
    rules: VllmRules,
    capability: tuple[int, int],
    *,
    pooling: bool,
) -> str:
    """The dtype vLLM runs `arch` in with `--dtype flag` (None or "auto": not given) on a GPU of `capability`.
    A name the release lacks raises ValueError as vLLM's argument parser would refuse it."""
    if flag is not None and flag not in rules.dtype_names:
        raise ValueError(
            f"argument --dtype: invalid choice: '{flag}' (choose from {', '.join(rules.dtype_names)})"
        )
    if flag is not None and flag != "auto":
        return DTYPE_ALIASES[flag]
    config = checkpoint_dtype(arch, rules)
    return _auto(rules, config, model_type(arch, rules), capability, pooling=pooling)


def served_architecture(
    arch: ModelArchitecture,
    flag: str | None,
    rules: VllmRules,
    capability: tuple[int, int],
    *,
    pooling: bool,
) -> ModelArchitecture:
    """`arch` as vLLM runs it: its dtype resolved; the dtype colo read for the files kept for what they hold."""
    return arch.served_in(resolve_dtype(arch, flag, rules, capability, pooling=pooling))


def dtype_refusals(arch: ModelArchitecture, rules: VllmRules, gpu: GpuSpec) -> list[str]:
    """What vLLM refuses about the dtype `arch` is served in (after served_architecture), in its words."""
    refusals = []
    kind = model_type(arch, rules)
    if arch.dtype == "float16" and kind in rules.float16_refused_model_types:
        refusals.append(
            f"ValueError: The model type '{kind}' does not support float16. Reason: {FLOAT16_REFUSAL_REASON}"
        )
    major, minor = gpu.compute_capability
    if arch.dtype == "bfloat16" and major * 10 + minor < 80:
        refusals.append(
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
            f"Your {gpu.device_name or gpu.name} GPU has compute capability {major}.{minor}. You can use float16 "
            "instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half."
        )
    return refusals
