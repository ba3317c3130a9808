"""Engine limits vLLM fills in when the user leaves them unset (`EngineArgs._set_default_args`)."""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GpuSpec
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.rules import VllmRules


@dataclass(frozen=True)
class EngineLimits:
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool = True  # vLLM chunks this model's prefills (chunks_prefill)
    # max_num_batched_tokens is the caller's own and vLLM keeps it (0.9.2-0.10.0 replace it without chunking)
    batched_tokens_given: bool = False


def derived_max_model_len(arch: ModelArchitecture, rules: VllmRules) -> float:
    """vLLM's derived maximum length (`_get_and_verify_max_len`): the config's, or a sentence-transformers
    model's max_seq_length where the release takes its sentence_bert_config.json."""
    length = arch.encoder_max_seq_length
    if length is not None and (
        arch.encoder_config_has_do_lower_case or not rules.encoder_config_needs_do_lower_case
    ):
        return length
    return arch.max_model_len_limit


def chunks_prefill(arch: ModelArchitecture) -> bool:
    """Whether vLLM chunks the model's prefills by default (vllm 0.22.0 config/model.py::ModelConfig.
    is_chunked_prefill_supported; 0.10.1-0.11.0 engine/arg_utils.py::_set_default_args_v1 and _set_default_args:
    a pooling model chunks only with LAST pooling and causal attention). Every generate model chunks. colo reads
    only the attention: an encoder-only (bidirectional) pooler does not chunk. A decoder pooling model with MEAN
    or CLS pooling (or STEP token pooling) does not chunk either, which colo does not read from the checkpoint's
    pooling config: it counts such a model as chunking, so it may under-size its batch and miss the refusal."""
    return not arch.encoder_only


def _batched_tokens(
    rules: VllmRules, given: int | None, default: int, *, model_len: int, seqs: int, chunked: bool
) -> int:
    """max_num_batched_tokens as vLLM sets it (rules.batched_tokens_default): vllm 0.10.0
    engine/arg_utils.py::_set_default_args_v1, 0.10.1-0.11.0 the same function, 0.11.1+ _set_default_args
    (0.22.0 _set_default_max_num_seqs_and_batched_tokens_args)."""
    if not chunked and rules.batched_tokens_default == "forced_model_len":
        return model_len  # over the user's value too
    if given is not None:
        return given
    if rules.batched_tokens_default != "floored":
        return default if chunked else model_len
    tokens = default if chunked else max(model_len, default)
    return min(seqs * model_len, tokens)


def resolve_limits(
    arch: ModelArchitecture,
    gpu: GpuSpec,
    rules: VllmRules,
    *,
    max_model_len: int | None,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
) -> EngineLimits:
    model_len = max_model_len or int(derived_max_model_len(arch, rules))  # vLLM's default: the derived length
    # vLLM matches the device name CUDA reports ("NVIDIA A100-SXM4-80GB"); a GPU given by memory has its label.
    defaults = rules.batch_defaults(gpu.device_name or gpu.name, gpu.cuda_total_bytes)
    seqs = max_num_seqs or defaults.max_num_seqs
    chunked = chunks_prefill(arch)
    tokens = _batched_tokens(
        rules,
        max_num_batched_tokens,
        defaults.max_num_batched_tokens,
        model_len=model_len,
        seqs=seqs,
        chunked=chunked,
    )
    if max_num_seqs is None and rules.max_num_seqs_capped_by_batched_tokens:
        seqs = min(seqs, tokens)  # vllm 0.10.1 engine/arg_utils.py::_set_default_args_v1
    forced = not chunked and rules.batched_tokens_default == "forced_model_len"
    given = max_num_batched_tokens is not None and not forced
    return EngineLimits(model_len, seqs, tokens, chunked, given)
