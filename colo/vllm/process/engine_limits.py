"""Engine limits vLLM fills in when the user leaves them unset (`EngineArgs._set_default_args`)."""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GpuSpec
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.pooling import release_declared_pooling
from colo.vllm.process.mm_profile import prefix_lm_item_tokens
from colo.vllm.rules import VllmRules


@dataclass(frozen=True)
class EngineLimits:
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool = True  # vLLM chunks this model's prefills (chunks_prefill)
    # max_num_batched_tokens is the caller's own and vLLM keeps it (0.9.2-0.10.0 replace it without chunking)
    batched_tokens_given: bool = False
    # the max_num_batched_tokens vLLM sets where the caller leaves it unset (None: not resolved by resolve_limits);
    # a given value equal to it runs the same engine
    unset_batched_tokens: int | None = None

    @property
    def batched_tokens_as_unset(self) -> bool:
        """The engine runs the batch it would with max_num_batched_tokens unset, whether or not it was given."""
        return self.max_num_batched_tokens == self.unset_batched_tokens


def derived_max_model_len(arch: ModelArchitecture, rules: VllmRules) -> float:
    """vLLM's derived maximum length (`_get_and_verify_max_len`): the config's, or a sentence-transformers
    model's max_seq_length where the release takes its sentence_bert_config.json."""
    length = arch.encoder_max_seq_length
    if length is not None and (
        arch.encoder_config_has_do_lower_case or not rules.encoder_config_needs_do_lower_case
    ):
        return length
    return arch.max_model_len_limit


def trained_limit(arch: ModelArchitecture, rules: VllmRules) -> float | None:
    """A NomicBertModel's trained length (times the config's RoPE factor) where the release holds max_model_len
    to it, None elsewhere: vllm 0.10.1 - 0.21.0 models/config.py::NomicBertModelConfig lowers a max_model_len
    left unset to `min(max_model_len, max_trained_positions)`, and verifies a user's one again with
    max_trained_positions in place of max_position_embeddings (rules.nomic_context)."""
    trained = arch.trained_length
    return trained.limit if trained is not None and rules.nomic_context == "trained_positions" else None


def position_ceiling(arch: ModelArchitecture, rules: VllmRules) -> int:
    """The positions the model serves: max_position_embeddings, at most a NomicBertModel's trained length where
    the release holds max_model_len to it (trained_limit); a longer max_model_len given is refused."""
    trained = trained_limit(arch, rules)
    ceiling = arch.max_position_embeddings
    return ceiling if trained is None else min(ceiling, int(trained))


def default_max_model_len(arch: ModelArchitecture, rules: VllmRules) -> int:
    """The max_model_len vLLM runs with where the user gives none: the derived one, at most a NomicBertModel's
    trained length where the release caps it (trained_limit)."""
    derived = int(derived_max_model_len(arch, rules))
    trained = arch.trained_length
    if trained is not None and trained_limit(arch, rules) is not None:
        return min(derived, trained.positions)
    return derived


# Decoder pooling classes whose default pooling is not LAST (every other class: LAST, interfaces_base.py's
# VllmModelForPooling), as vLLM's @default_pooling_type sets it: the one pooling type up to 0.13.0, then the
# (sequence, token) pair (0.14.0 - 0.34.0). vllm 0.10.1 - 0.13.0 qwen2_rm.py, internlm2.py, gritlm.py (0.11.0+);
# 0.14.0, 0.22.0, 0.34.0 the same classes with seq_pooling_type / tok_pooling_type; 0.34.0 embedding_gemma2.py,
# lfm2.py. The encoder-only classes (BERT family: CLS) are `arch.encoder_only`.
CLASS_POOLING: dict[str, tuple[str, tuple[str, str]]] = {
    "GritLM": ("MEAN", ("MEAN", "ALL")),
    "Qwen2ForRewardModel": ("ALL", ("LAST", "ALL")),
    "InternLM2ForRewardModel": ("ALL", ("LAST", "ALL")),
    "Qwen2ForProcessRewardModel": ("STEP", ("LAST", "STEP")),
    "EmbeddingGemma2Model": ("MEAN", ("MEAN", "ALL")),
    "Lfm2BidirectionalModel": ("CLS", ("CLS", "ALL")),
}
SEQ_POOLING = ("CLS", "LAST", "MEAN")  # vllm 0.22.0 config/pooler.py SEQ_POOLING_TYPES
TOK_POOLING = ("ALL", "STEP")  # TOK_POOLING_TYPES


def _last_of(names: tuple[str, ...], kinds: tuple[str, ...], default: str) -> str:
    found = [name for name in names if name in kinds]
    return found[-1] if found else default


def pooling_chunks(arch: ModelArchitecture, rules: VllmRules) -> bool:
    """Whether vLLM chunks a pooling model's prefills (rules.pooling_chunks): an encoder-only or non-causal model
    never does; else it depends on the pooling the checkpoint's sentence-transformers config declares, as the
    release reads it (release_declared_pooling), or the model class's default (CLASS_POOLING) where it declares
    none. A catalog model without `pooling:`, or a checkpoint (local, on the Hub or under an S3 prefix) without a
    Pooling module, takes the class default, as vLLM does without one."""
    if arch.encoder_only or not arch.is_causal:
        return False
    declared = release_declared_pooling(arch, rules) or ()
    single, (seq, tok) = CLASS_POOLING.get(arch.architecture, ("LAST", ("LAST", "ALL")))
    if rules.pooling_chunks == "declared_last":
        return declared[:1] == ("LAST",)
    if rules.pooling_chunks == "seq_tok":
        if seq == "CLS":  # a class defaulting to CLS pooling attends bidirectionally (attn_type)
            return False
        seq, tok = _last_of(declared, SEQ_POOLING, seq), _last_of(declared, TOK_POOLING, tok)
        return seq not in ("MEAN", "CLS") and tok != "STEP"
    kind = declared[0] if declared else single
    if rules.pooling_chunks == "last":
        return kind == "LAST"
    return kind not in ("MEAN", "STEP", "CLS")


def chunks_prefill(arch: ModelArchitecture, rules: VllmRules, *, pooling: bool) -> bool:
    """Whether vLLM chunks the model's prefills by default (vllm 0.22.0 config/model.py::ModelConfig.
    is_chunked_prefill_supported; 0.9.2-0.11.2 engine/arg_utils.py::_set_default_args_v1 and _set_default_args):
    every generate model does; a pooling model as pooling_chunks says. An encoder-only model is always a pooling
    one."""
    return pooling_chunks(arch, rules) if pooling or arch.encoder_only else True


def mm_batch_floor(
    arch: ModelArchitecture, rules: VllmRules, *, language_model_only: bool, mm_limits: dict[str, int]
) -> int:
    """The tokens vLLM raises an unset max_num_batched_tokens to for a multimodal prefix-LM model (0: none):
    one maximum-size item of its most expensive modality (vllm 0.22.0 - 0.34.0 engine/arg_utils.py::
    _get_min_mm_batched_tokens, rules.mm_prefix_batch_floor). From 0.27.0 a model whose multimodal inputs are
    disabled (every modality it serves at limit 0) is no prefix-LM (config/model.py::
    _supports_multimodal_for_mm_prefix over 0.27.0 multimodal/registry.py::supports_multimodal_inputs, 0.34.0
    config/model.py::_supports_multimodal_inputs)."""
    items = prefix_lm_item_tokens(arch) if arch.mm_prefix_lm else None
    if not items or rules.mm_prefix_batch_floor == "none":
        return 0
    if rules.mm_prefix_batch_floor == "with_mm_inputs" and (
        language_model_only or all(mm_limits.get(m, 1) == 0 for m in items)
    ):
        return 0
    return max(items.values())


def _batched_tokens(
    rules: VllmRules,
    default: int,
    *,
    model_len: int,
    seqs: int,
    chunked: bool,
    mm_floor: int = 0,
) -> int:
    """max_num_batched_tokens as vLLM sets it where the caller leaves it unset (rules.batched_tokens_default) and
    vLLM does not force it to the model length (resolve_limits): vllm 0.10.0 engine/arg_utils.py::
    _set_default_args_v1, 0.10.1-0.11.0 the same function, 0.11.1+ _set_default_args (0.22.0
    _set_default_max_num_seqs_and_batched_tokens_args, which raises it to `mm_floor` before the cap)."""
    if rules.batched_tokens_default != "floored":
        return default if chunked else model_len
    tokens = max(default if chunked else max(model_len, default), mm_floor)
    return min(seqs * model_len, tokens)


def resolve_limits(
    arch: ModelArchitecture,
    gpu: GpuSpec,
    rules: VllmRules,
    *,
    max_model_len: int | None,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    pooling: bool = False,
    language_model_only: bool = False,
    mm_limits: dict[str, int] | None = None,
) -> EngineLimits:
    model_len = max_model_len or default_max_model_len(arch, rules)
    # vLLM matches the device name CUDA reports ("NVIDIA A100-SXM4-80GB"); a GPU given by memory has its label.
    defaults = rules.batch_defaults(gpu.device_name or gpu.name, gpu.cuda_total_bytes)
    seqs = max_num_seqs or defaults.max_num_seqs
    chunked = chunks_prefill(arch, rules, pooling=pooling)
    # 0.9.2-0.10.0 set a model that does not chunk to max_model_len, over the user's value too
    forced = not chunked and rules.batched_tokens_default == "forced_model_len"
    unset = (
        model_len
        if forced
        else _batched_tokens(
            rules,
            defaults.max_num_batched_tokens,
            model_len=model_len,
            seqs=seqs,
            chunked=chunked,
            mm_floor=mm_batch_floor(
                arch, rules, language_model_only=language_model_only, mm_limits=mm_limits or {}
            ),
        )
    )
    tokens = unset if forced or max_num_batched_tokens is None else max_num_batched_tokens
    if max_num_seqs is None and rules.max_num_seqs_capped_by_batched_tokens:
        seqs = min(seqs, tokens)  # vllm 0.10.1 engine/arg_utils.py::_set_default_args_v1
    given = max_num_batched_tokens is not None and not forced
    return EngineLimits(model_len, seqs, tokens, chunked, given, unset)
