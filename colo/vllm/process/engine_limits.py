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


def derived_max_model_len(arch: ModelArchitecture, rules: VllmRules) -> float:
    """vLLM's derived maximum length (`_get_and_verify_max_len`): the config's, or a sentence-transformers
    model's max_seq_length where the release takes its sentence_bert_config.json."""
    length = arch.encoder_max_seq_length
    if length is not None and (
        arch.encoder_config_has_do_lower_case or not rules.encoder_config_needs_do_lower_case
    ):
        return length
    return arch.max_model_len_limit


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
    # Encoder-only (bidirectional) poolers cannot chunk a prefill, so one batch must hold a whole input.
    chunked = not arch.encoder_only
    if max_num_batched_tokens is not None:
        tokens = max_num_batched_tokens
    elif not chunked:
        tokens = model_len
    else:
        tokens = defaults.max_num_batched_tokens
    if max_num_seqs is None and rules.max_num_seqs_capped_by_batched_tokens:
        seqs = min(seqs, tokens)  # vllm 0.10.1 engine/arg_utils.py::_set_default_args_v1
    return EngineLimits(model_len, seqs, tokens)
