"""What vLLM refuses before it sizes anything, in its own words: an architecture the release does not register,
an engine colo does not mirror, a context longer than the model's, a tensor-parallel size that does not split the
heads, a pipeline-parallel size the model class or the layers do not allow, a dtype the GPU or the model type
cannot run, a declared pooling the release cannot parse, batch limits the scheduler config rejects,
bidirectional attention the release cannot build.

Each refusal names the config key it belongs to (the stack's camelCase name), so `colo plan` and
`colo estimate` can point at the setting to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GpuSpec
from colo.vllm.architectures import architecture_refusal
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.pooling import KNOWN_POOLING, release_declared_pooling
from colo.vllm.process.attention_type import bidirectional_failure
from colo.vllm.process.engine_limits import EngineLimits, derived_max_model_len, trained_limit
from colo.vllm.process.engine_select import v0_fallback_features, v0_fallback_message
from colo.vllm.process.model_dtype import dtype_refusals
from colo.vllm.rules import (
    VllmRules,
    first_release_where,
    pp_placed_architectures,
    pp_placement,
    supports_pipeline_parallel,
)

ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


@dataclass(frozen=True)
class Refusal:
    key: str  # camelCase config key: "vllm.version", "maxModelLen", "tensorParallelSize"
    message: str


@dataclass(frozen=True)
class ServerSettings:
    """The settings these checks read, as the stack or `colo estimate` gives them."""

    version: str
    pooling: bool
    kv_cache_dtype: str = "auto"
    speculative_method: str | None = None
    max_model_len: int | None = None  # only an explicit value can exceed the model's
    tensor_parallel_size: int = 1
    allow_long_max_model_len: bool = False  # the stack sets VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
    language_model_only: bool = False
    skip_mm_profiling: bool = False
    trust_remote_code: bool = False  # --trust-remote-code: the repository's own code may run
    pipeline_parallel_size: int = 1  # `colo estimate` only: a stack server runs on one GPU


def max_model_len_refusal(
    rules: VllmRules, arch: ModelArchitecture, settings: ServerSettings
) -> Refusal | None:
    """`_get_and_verify_max_len` (vllm 0.8.0 config.py .. 0.33.0 config/model.py): a user max_model_len above
    the derived one is refused unless the config's model_max_length allows it or the override is set. A
    NomicBertModel's releases up to 0.21.0 then verify it again against its trained length (trained_limit)."""
    wanted = settings.max_model_len
    if wanted is None or settings.allow_long_max_model_len:
        return None
    if arch.model_max_length is not None and wanted <= arch.model_max_length:
        return None
    # an int, or a float after a RoPE factor (vLLM prints 131072.0)
    limits = [(arch.max_model_len_key, derived_max_model_len(arch, rules))]
    if (trained := trained_limit(arch, rules)) is not None:
        limits.append(("max_position_embeddings", trained))
    over = next(((key, limit) for key, limit in limits if wanted > limit), None)
    if over is None:
        return None
    key, limit = over
    msg = (
        f"User-specified max_model_len ({wanted}) is greater than the derived max_model_len "
        f"({key}={limit} or model_max_length={arch.model_max_length} in model's config.json)."
    )
    if rules.max_model_len_error == "0.8.0":
        text = (
            f"{msg} This may lead to incorrect model outputs or CUDA errors. To allow overriding this maximum, "
            f"set the env var {ALLOW_LONG_ENV}=1"
        )
    else:
        text = (
            f"{msg} To allow overriding this maximum, set the env var {ALLOW_LONG_ENV}=1. {ALLOW_LONG_ENV} must be "
            f"used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
            f"derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding "
            f"derived_max_model_len will cause a CUDA array out-of-bounds error."
        )
    return Refusal(
        "maxModelLen",
        f"ValueError: {text} [fix: maxModelLen at most {int(min(lim for _, lim in limits))}, or "
        f"allowLongMaxModelLen: true if the model really handles longer inputs]",
    )


def tensor_parallel_refusal(arch: ModelArchitecture, tp: int) -> Refusal | None:
    """`ModelConfig.verify_with_parallel_config` (heads) and `QKVParallelLinear.__init__` (KV heads: `divide`
    asserts), identical from 0.8.0 to 0.33.0; a size below 1 fails validation (0.23+) or a division."""
    if tp < 1:
        return Refusal("tensorParallelSize", f"tensor_parallel_size must be at least 1, got {tp}")
    heads, kv = arch.num_attention_heads, arch.num_kv_heads
    if heads % tp:
        return Refusal(
            "tensorParallelSize",
            f"ValueError: Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}).",
        )
    if arch.mla is None and (tp % kv if tp >= kv else kv % tp):
        bigger, smaller = (tp, kv) if tp >= kv else (kv, tp)
        return Refusal(
            "tensorParallelSize",
            f"AssertionError: {bigger} is not divisible by {smaller} (the {kv} KV heads must split evenly over "
            f"{tp} ranks, or the ranks over the heads)",
        )
    return None


def missing_flag_refusals(rules: VllmRules, settings: ServerSettings) -> list[Refusal]:
    """Multimodal flags the release's argument parser does not know (vLLM exits on an unknown flag)."""
    refusals = []
    if settings.language_model_only and not rules.language_model_only_flag:
        added = first_release_where(lambda r: r.language_model_only_flag)
        refusals.append(
            Refusal(
                "languageModelOnly",
                f"vLLM {settings.version} has no --language-model-only (added in {added}); set limitMmPerPrompt to 0 "
                f"for every modality instead",
            )
        )
    if settings.skip_mm_profiling and not rules.skip_mm_profiling_flag:
        added = first_release_where(lambda r: r.skip_mm_profiling_flag)
        refusals.append(
            Refusal(
                "skipMmProfiling", f"vLLM {settings.version} has no --skip-mm-profiling (added in {added})"
            )
        )
    return refusals


def pipeline_parallel_refusal(
    rules: VllmRules, arch: ModelArchitecture, settings: ServerSettings
) -> Refusal | None:
    """What `--pipeline-parallel-size` cannot be: below 1; more stages than decoder layers, which leaves a stage
    with no layer (vLLM has no check of its own and colo does not size such a stage); for a model class without
    SupportsPP (`ModelConfig.verify_with_parallel_config`, vllm 0.8.0 .. 0.33.0, colo/vllm/pp_support.yaml);
    with speculative decoding, whose drafter colo does not place on a stage."""
    pp = settings.pipeline_parallel_size
    if pp < 1:
        return Refusal("pipelineParallelSize", f"pipeline_parallel_size must be at least 1, got {pp}")
    if pp == 1:
        return None
    if not supports_pipeline_parallel(arch.architecture, settings.version):
        return Refusal(
            "pipelineParallelSize",
            "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models "
            f"implement the `SupportsPP` interface. ({arch.architecture} in vLLM {settings.version})",
        )
    if pp_placement(arch.architecture) is None:
        return Refusal(
            "pipelineParallelSize",
            f"colo has not read where vLLM's {arch.architecture} builds its embedding and lm_head across pipeline "
            f"stages; it sizes pipeline parallelism for {', '.join(pp_placed_architectures())}",
        )
    if pp > arch.num_layers:
        return Refusal(
            "pipelineParallelSize",
            f"{pp} pipeline stages for {arch.num_layers} decoder layers would leave a stage without a layer "
            f"(get_pp_indices); vLLM does not check this and colo does not size it: use at most {arch.num_layers}",
        )
    if settings.speculative_method is not None:
        return Refusal(
            "speculativeMethod",
            "colo does not size speculative decoding with pipeline parallelism (where the drafter and its "
            "KV cache sit); drop one of them",
        )
    return None


def declared_pooling_refusal(
    rules: VllmRules, arch: ModelArchitecture, version: str, *, pooling: bool
) -> Refusal | None:
    """`get_pooling_config` (vllm 0.10.1-0.13.0 transformers_utils/config.py) names the pooling by the first key
    the checkpoint's sentence-transformers Pooling config sets true and raises on a name it does not know
    (get_pooling_config_name), on a pooling server (`pooling`: ModelConfig._init_pooler_config). A server
    without --runner would read it too, to resolve its runner (_get_default_runner_type), but colo's LLM passes
    --runner generate wherever a Pooling module is declared (colo.vllm.serve_args._generation_args), and vLLM
    then never reads it. Earlier releases ignore such a name, later ones skip it (rules.unknown_pooling)."""
    declared = release_declared_pooling(arch, rules)
    if not pooling or rules.unknown_pooling != "raises" or not declared or declared[0] in KNOWN_POOLING:
        return None
    first = declared[0]
    skipped = first_release_where(lambda r: r.unknown_pooling == "skipped")
    return Refusal(
        "vllm.version",
        f"NotImplementedError: Pooling type {first} not supported (vLLM {version} takes the pooling from the first "
        f"key set true in the config.json of the checkpoint's sentence-transformers Pooling module, which "
        f"modules.json names, and knows only {', '.join(KNOWN_POOLING)}) [fix: vLLM {skipped} or later, which "
        f"skips a pooling type it does not know, or a checkpoint whose Pooling config sets one of those first]",
    )


def batch_limits_refusal(limits: EngineLimits) -> Refusal | None:
    """`SchedulerConfig.verify_max_model_len` over the limits vLLM will run with (vllm 0.11.1-0.34.0
    config/scheduler.py; the same checks and words in `SchedulerConfig._verify_args`, 0.9.2-0.10.0 config.py,
    0.10.1-0.11.0 config/scheduler.py): without chunked prefill a batch must hold a whole input, and a batch
    must give each of max_num_seqs sequences a token. vLLM raises the first that fails; so does this, with a
    fix that passes both. The key is the setting to change: maxNumBatchedTokens where it was given, else
    maxNumSeqs (or maxModelLen, for a length vLLM's own default batch cannot hold)."""
    tokens, seqs, length = limits.max_num_batched_tokens, limits.max_num_seqs, limits.max_model_len
    enough = max(seqs, length if not limits.chunked_prefill else 0)  # the fewest tokens both checks pass
    if tokens < length and not limits.chunked_prefill:
        text = (
            f"ValueError: max_num_batched_tokens ({tokens}) is smaller than max_model_len ({length}). This "
            f"effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
            f"longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."
        )
        why = "the model does not chunk its prefills, so one batch must hold a whole input"
        if not limits.batched_tokens_given:
            return Refusal("maxModelLen", f"{text} [fix: maxModelLen at most {tokens}: {why}]")
        shorter = f", or maxModelLen at most {tokens}" if tokens >= seqs else ""
        return Refusal(
            "maxNumBatchedTokens", f"{text} [fix: maxNumBatchedTokens at least {enough}{shorter}: {why}]"
        )
    if tokens < seqs:
        text = (
            f"ValueError: max_num_batched_tokens ({tokens}) must be greater than or equal to max_num_seqs "
            f"({seqs})."
        )
        if not limits.batched_tokens_given:
            return Refusal(
                "maxNumSeqs",
                f"{text} [fix: maxNumSeqs at most {tokens}, the max_num_batched_tokens vLLM sets for this server]",
            )
        return Refusal(
            "maxNumBatchedTokens",
            f"{text} [fix: maxNumBatchedTokens at least {enough}, or maxNumSeqs at most {tokens}]",
        )
    return None


def vllm_refusals(
    rules: VllmRules, arch: ModelArchitecture, gpu: GpuSpec, settings: ServerSettings
) -> list[Refusal]:
    """Everything vLLM would refuse (or, for the engine, run elsewhere) before the memory budget applies.
    `arch` is the model as vLLM runs it (colo.vllm.process.model_dtype.served_architecture)."""
    unserved = architecture_refusal(
        settings.version,
        [arch.architecture],
        has_auto_map=arch.has_auto_map,
        trust_remote_code=settings.trust_remote_code,
        pooling=settings.pooling,
        model=arch.model_id,
        model_type=arch.model_type,
        auto_config=arch.auto_config,
    )
    if unserved is not None:
        return [Refusal(unserved.key, unserved.message)]  # nothing else matters for a model vLLM cannot load
    pooling = declared_pooling_refusal(rules, arch, settings.version, pooling=settings.pooling)
    refusals: list[Refusal] = [pooling] if pooling is not None else []
    refusals += [Refusal("dtype", text) for text in dtype_refusals(arch, rules, gpu)]
    features = v0_fallback_features(
        rules,
        arch,
        gpu,
        pooling=settings.pooling,
        kv_cache_dtype=settings.kv_cache_dtype,
        speculative_method=settings.speculative_method,
        pipeline_parallel_size=settings.pipeline_parallel_size,
    )
    if features:
        refusals.append(Refusal("vllm.version", v0_fallback_message(settings.version, features)))
    refusals += missing_flag_refusals(rules, settings)
    failure = bidirectional_failure(arch, rules, settings.version) if settings.pooling else None
    if failure is not None:
        refusals.append(Refusal("vllm.version", failure))
    for refusal in (
        max_model_len_refusal(rules, arch, settings),
        tensor_parallel_refusal(arch, settings.tensor_parallel_size),
        pipeline_parallel_refusal(rules, arch, settings),
    ):
        if refusal is not None:
            refusals.append(refusal)
    return refusals
