"""Which pooling models vLLM chunks, from the pooling their sentence-transformers files declare (modules.json and
the Pooling module's config.json), else the model class's default: vllm 0.22.0 config/model.py::ModelConfig.
is_chunked_prefill_supported, 0.9.2-0.11.2 engine/arg_utils.py::_set_default_args_v1 / _set_default_args. A
decoder that pools MEAN does not chunk: its default batch holds a whole input, and a shorter one is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from colo.catalog import gpu
from colo.vllm import EstimateRefused, EstimateRequest, catalog_architecture, estimate
from colo.vllm.checkpoint import hub as hub_module
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.hub import read_hub_model
from colo.vllm.checkpoint.pooling import POOLING_MODULE, pooling_name, release_declared_pooling
from colo.vllm.process.engine_limits import chunks_prefill, resolve_limits
from colo.vllm.process.refusals import batch_limits_refusal, declared_pooling_refusal
from colo.vllm.rules import rules_for
from tests.hub.fixtures import HUB_FILES
from tests.hub.plugin import HubRun
from tests.vllm.helpers import QWEN3_SMALL_DECODER

QWEN3_DECODER = {"architectures": ["Qwen3ForCausalLM"], **QWEN3_SMALL_DECODER}
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
MODES = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken")


def _embedder(root: Path, mode: str | None) -> Path:
    """A model directory: a Qwen3 decoder's config.json, with sentence-transformers pooling `mode` (None: none)."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps(QWEN3_DECODER))
    if mode is not None:
        (root / "modules.json").write_text(json.dumps(MODULES))
        (root / "1_Pooling").mkdir()
        pooling = {"word_embedding_dimension": 1024, **{f"pooling_mode_{m}": m == mode for m in MODES}}
        (root / "1_Pooling" / "config.json").write_text(json.dumps({**pooling, "include_prompt": True}))
    return root


@pytest.fixture
def mean(tmp_path: Path) -> Path:
    return _embedder(tmp_path / "mean-embedder", "mean_tokens")


@pytest.fixture
def last(tmp_path: Path) -> Path:
    return _embedder(tmp_path / "last-embedder", "lasttoken")


def _limits(arch: ModelArchitecture, version: str, **given: int | None):  # type: ignore[no-untyped-def]
    return resolve_limits(
        arch,
        gpu("L40S"),
        rules_for(version),
        max_model_len=given.get("max_model_len"),
        max_num_seqs=given.get("max_num_seqs"),
        max_num_batched_tokens=given.get("max_num_batched_tokens"),
        pooling=True,
    )


def test_vllms_names_for_the_pooling_keys() -> None:
    assert [pooling_name(f"pooling_mode_{m}") for m in MODES] == [
        "CLS",
        "MEAN",
        "MAX",
        "MEAN",
        "WEIGHTEDMEAN",
        "LAST",
    ]
    assert pooling_name("include_prompt") == "INCLUDE"


def test_a_model_directory_declares_its_pooling(mean: Path, last: Path, tmp_path: Path) -> None:
    assert architecture_from_path(mean, "m").declared_pooling == ("MEAN", "INCLUDE")
    assert architecture_from_path(last / "config.json", "l").declared_pooling == ("LAST", "INCLUDE")
    assert architecture_from_path(_embedder(tmp_path / "plain", None), "p").declared_pooling is None


@pytest.mark.parametrize("version", ["0.9.2", "0.10.1", "0.12.0", "0.13.0", "0.19.1", "0.22.0", "0.34.0"])
def test_a_mean_pooled_decoder_does_not_chunk_and_a_last_pooled_one_does(
    mean: Path, last: Path, version: str
) -> None:
    rules = rules_for(version)
    assert not chunks_prefill(architecture_from_path(mean, "m"), rules, pooling=True)
    assert chunks_prefill(architecture_from_path(last, "l"), rules, pooling=True)
    assert chunks_prefill(architecture_from_path(mean, "m"), rules, pooling=False)  # generating, it chunks


def test_a_mean_pooled_decoders_default_batch_holds_a_whole_input(mean: Path, last: Path) -> None:
    for version in (
        "0.19.1",
        "0.22.0",
    ):  # max(max_model_len, the tier's 2048), at most max_num_seqs x max_model_len
        assert (
            _limits(architecture_from_path(mean, "m"), version, max_model_len=8192).max_num_batched_tokens
            == 8192
        )
        assert (
            _limits(architecture_from_path(last, "l"), version, max_model_len=8192).max_num_batched_tokens
            == 2048
        )
    assert (
        _limits(architecture_from_path(mean, "m"), "0.10.1", max_model_len=8192).max_num_batched_tokens
        == 8192
    )


@pytest.mark.parametrize("version", ["0.10.1", "0.11.0", "0.19.1", "0.22.0", "0.34.0"])
def test_a_shorter_batch_is_refused_for_a_mean_pooled_decoder_only(
    mean: Path, last: Path, version: str
) -> None:
    given = {"max_model_len": 8192, "max_num_batched_tokens": 2048}
    refusal = batch_limits_refusal(_limits(architecture_from_path(mean, "m"), version, **given))
    assert refusal is not None
    assert refusal.key == "maxNumBatchedTokens"
    assert "max_num_batched_tokens (2048) is smaller than max_model_len (8192)" in refusal.message
    assert batch_limits_refusal(_limits(architecture_from_path(last, "l"), version, **given)) is None


def test_0_10_0_raises_a_non_chunking_batch_over_the_users_value(mean: Path) -> None:
    limits = _limits(
        architecture_from_path(mean, "m"), "0.10.0", max_model_len=8192, max_num_batched_tokens=2048
    )
    assert (limits.max_num_batched_tokens, limits.chunked_prefill) == (8192, False)
    assert batch_limits_refusal(limits) is None


def test_without_a_declared_pooling_vllm_takes_the_class_default(tmp_path: Path) -> None:
    plain = architecture_from_path(_embedder(tmp_path / "plain", None), "p")
    assert chunks_prefill(plain, rules_for("0.10.1"), pooling=True)  # the class's LAST
    assert chunks_prefill(plain, rules_for("0.22.0"), pooling=True)
    assert not chunks_prefill(plain, rules_for("0.10.0"), pooling=True)  # no class default before 0.10.1
    grit = replace(plain, architecture="GritLM")  # @default_pooling_type(seq_pooling_type="MEAN")
    assert not chunks_prefill(grit, rules_for("0.22.0"), pooling=True)
    reward = replace(plain, architecture="Qwen2ForRewardModel")  # ALL: chunked only from 0.13.0
    assert not chunks_prefill(reward, rules_for("0.12.0"), pooling=True)
    assert chunks_prefill(reward, rules_for("0.13.0"), pooling=True)
    assert chunks_prefill(reward, rules_for("0.22.0"), pooling=True)
    process_reward = replace(plain, architecture="Qwen2ForProcessRewardModel")  # STEP never chunks
    assert not chunks_prefill(process_reward, rules_for("0.22.0"), pooling=True)
    assert not chunks_prefill(replace(plain, is_causal=False), rules_for("0.22.0"), pooling=True)


def test_the_release_decides_which_declared_key_counts(tmp_path: Path) -> None:
    """0.14.0+ takes the last sequence pooling key set true; earlier releases the first key set true."""
    plain = architecture_from_path(_embedder(tmp_path / "plain", None), "p")
    both = replace(plain, declared_pooling=("MEAN", "LAST"))
    assert not chunks_prefill(both, rules_for("0.13.0"), pooling=True)
    assert chunks_prefill(both, rules_for("0.14.0"), pooling=True)


def test_the_catalogs_embedders_declare_last_token_pooling_and_chunk() -> None:
    for model in ("Qwen/Qwen3-Embedding-0.6B", "Qwen/Qwen3-Embedding-8B"):
        arch = catalog_architecture(model)
        assert arch.declared_pooling == ("LAST",)
        for version in ("0.9.2", "0.10.1", "0.19.1", "0.22.0"):
            assert chunks_prefill(arch, rules_for(version), pooling=True)
    assert catalog_architecture("Qwen/Qwen3-Reranker-0.6B").declared_pooling is None  # the class default


def test_estimate_refuses_a_short_batch_for_a_mean_pooled_model_directory(mean: Path) -> None:
    request = EstimateRequest(
        model=str(mean),
        vllm_version="0.22.0",
        gpu="L40S",
        pooling=True,
        max_model_len=4096,
        max_num_batched_tokens=2048,
    )
    with pytest.raises(EstimateRefused) as refused:
        estimate(request)
    assert refused.value.field == "max_num_batched_tokens"
    assert "is smaller than max_model_len (4096)" in refused.value.message
    assert estimate(replace(request, max_num_batched_tokens=None)).budget is not None


@pytest.fixture
def fresh_reads() -> Iterator[None]:
    hub_module._read.cache_clear()
    yield
    hub_module._read.cache_clear()


def test_a_hub_model_declares_the_pooling_its_files_on_the_hub_do(
    local_hub: HubRun, fresh_reads: None
) -> None:
    """NovaSearch/stella_en_1.5B_v5: a Qwen2 decoder whose 1_Pooling/config.json pools MEAN."""
    read = read_hub_model("NovaSearch/stella_en_1.5B_v5")
    local = architecture_from_path(
        HUB_FILES / "NovaSearch" / "stella_en_1.5B_v5", "NovaSearch/stella_en_1.5B_v5"
    )
    assert read.arch.declared_pooling == local.declared_pooling == ("MEAN", "INCLUDE")
    assert not chunks_prefill(read.arch, rules_for("0.22.0"), pooling=True)
    embedder = read_hub_model("Qwen/Qwen3-Embedding-4B")  # config.json only: vLLM takes the class's LAST
    assert embedder.arch.declared_pooling is None
    assert chunks_prefill(embedder.arch, rules_for("0.22.0"), pooling=True)


@pytest.fixture
def max_pooled(tmp_path: Path) -> Path:
    return _embedder(tmp_path / "max-embedder", "max_tokens")


@pytest.mark.parametrize("version", ["0.10.1", "0.10.2", "0.11.0", "0.11.2", "0.12.0", "0.13.0"])
def test_a_first_declared_pooling_vllm_does_not_know_is_refused_where_vllm_raises(
    max_pooled: Path, version: str
) -> None:
    """0.10.1-0.13.0 get_pooling_config_name: NotImplementedError for the first key set true outside LAST, ALL,
    CLS, STEP, MEAN, on a pooling server (ModelConfig._init_pooler_config)."""
    arch = architecture_from_path(max_pooled, "m")
    assert arch.declared_pooling == ("MAX", "INCLUDE")
    refusal = declared_pooling_refusal(rules_for(version), arch, version, pooling=True)
    assert refusal is not None and refusal.key == "vllm.version"
    assert refusal.message.startswith("NotImplementedError: Pooling type MAX not supported")
    assert "[fix: vLLM 0.14.0 or later, which skips a pooling type it does not know" in refusal.message
    include_first = replace(arch, declared_pooling=("INCLUDE", "LAST"))  # include_prompt before the mode
    refusal = declared_pooling_refusal(rules_for(version), include_first, version, pooling=True)
    assert refusal is not None and "Pooling type INCLUDE not supported" in refusal.message


@pytest.mark.parametrize("version", ["0.10.1", "0.12.0", "0.13.0"])
def test_an_llm_that_declares_an_unknown_pooling_is_not_refused_as_it_passes_runner_generate(
    max_pooled: Path, version: str
) -> None:
    """A server without --runner would read the Pooling config to resolve its runner (_get_default_runner_type)
    and raise; colo's LLM passes --runner generate for such a checkpoint, so vLLM never reads it."""
    arch = architecture_from_path(max_pooled, "m")
    assert declared_pooling_refusal(rules_for(version), arch, version, pooling=False) is None
    request = EstimateRequest(model=str(max_pooled), vllm_version=version, gpu="L40S", pooling=False)
    assert estimate(request).budget is not None


@pytest.mark.parametrize("version", ["0.9.2", "0.10.0", "0.14.0", "0.19.1", "0.22.0", "0.34.0"])
def test_a_declared_pooling_vllm_does_not_know_starts_where_vllm_ignores_or_skips_it(
    max_pooled: Path, version: str
) -> None:
    assert (
        declared_pooling_refusal(
            rules_for(version), architecture_from_path(max_pooled, "m"), version, pooling=True
        )
        is None
    )


def test_a_known_first_pooling_is_not_refused_whatever_follows(mean: Path, last: Path) -> None:
    for model in (mean, last):  # ("MEAN" | "LAST", "INCLUDE"): the first key set true is the one parsed
        assert (
            declared_pooling_refusal(
                rules_for("0.12.0"), architecture_from_path(model, "m"), "0.12.0", pooling=True
            )
            is None
        )
    plain = catalog_architecture("Qwen/Qwen3-Reranker-0.6B")  # declares none
    assert declared_pooling_refusal(rules_for("0.12.0"), plain, "0.12.0", pooling=True) is None


def test_from_0_14_0_an_unknown_pooling_is_skipped_and_the_class_default_counts(max_pooled: Path) -> None:
    """0.14.0+ get_pooling_config keeps only SEQ_POOLING_TYPES and TOK_POOLING_TYPES: MAX and INCLUDE are
    skipped, so the decoder pools as its class does (LAST) and chunks; before 0.10.1 no pooling is declared."""
    arch = architecture_from_path(max_pooled, "m")
    for version in ("0.14.0", "0.22.0", "0.34.0"):
        assert chunks_prefill(arch, rules_for(version), pooling=True)
    assert not chunks_prefill(arch, rules_for("0.10.0"), pooling=True)  # declared_last: MAX is not LAST
    both = replace(arch, declared_pooling=("MAX", "MEAN"))
    assert not chunks_prefill(both, rules_for("0.22.0"), pooling=True)  # MEAN still counts


def test_estimate_refuses_an_unknown_declared_pooling_naming_the_release(max_pooled: Path) -> None:
    request = EstimateRequest(model=str(max_pooled), vllm_version="0.12.0", gpu="L40S", pooling=True)
    with pytest.raises(EstimateRefused) as refused:
        estimate(request)
    assert refused.value.field == "vllm_version"
    assert "Pooling type MAX not supported" in refused.value.message
    assert estimate(replace(request, vllm_version="0.14.0")).budget is not None


NEWER_POOLING_MODULE = "sentence_transformers.sentence_transformer.modules.pooling.Pooling"


def _mode_string_embedder(root: Path, module_type: str) -> Path:
    """A Qwen3 decoder saved in the newer sentence-transformers layout: its Pooling module (of `module_type`)
    names MEAN by a string pooling_mode, with include_prompt set true after it."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps(QWEN3_DECODER))
    modules = [dict(m, type=module_type) if m["path"] == "1_Pooling" else m for m in MODULES]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling").mkdir()
    config = {"embedding_dimension": 1024, "pooling_mode": "mean", "include_prompt": True}
    (root / "1_Pooling" / "config.json").write_text(json.dumps(config))
    return root


def test_a_string_pooling_mode_counts_from_0_30_0(tmp_path: Path) -> None:
    """0.30.0 get_pooling_config names a pooling by a `pooling_mode` key's string value; 0.29.0 reads only the keys
    set true (include_prompt: INCLUDE, which 0.14.0+ skip for the class's LAST, and 0.10.1-0.13.0 refuse)."""
    arch = architecture_from_path(_mode_string_embedder(tmp_path / "m", POOLING_MODULE), "m")
    assert (arch.declared_pooling, arch.declared_pooling_mode_string) == (("INCLUDE",), ("MEAN", "INCLUDE"))
    for version in ("0.14.0", "0.22.0", "0.29.0"):
        assert release_declared_pooling(arch, rules_for(version)) == ("INCLUDE",)
        assert chunks_prefill(arch, rules_for(version), pooling=True)  # the class's LAST
    for version in ("0.30.0", "0.31.0", "0.34.0"):
        assert release_declared_pooling(arch, rules_for(version)) == ("MEAN", "INCLUDE")
        assert not chunks_prefill(arch, rules_for(version), pooling=True)
    refusal = declared_pooling_refusal(rules_for("0.12.0"), arch, "0.12.0", pooling=True)
    assert refusal is not None and "Pooling type INCLUDE not supported" in refusal.message


def test_the_newer_pooling_module_type_is_a_pooling_module_from_0_30_0(tmp_path: Path) -> None:
    """0.30.0 _ST_POOLING_MODULE_TYPES adds sentence_transformers.sentence_transformer.modules.pooling.Pooling;
    before it such a checkpoint declares no pooling, and vLLM takes the class's."""
    arch = architecture_from_path(_mode_string_embedder(tmp_path / "m", NEWER_POOLING_MODULE), "m")
    assert (arch.declared_pooling, arch.declared_pooling_mode_string) == (None, ("MEAN", "INCLUDE"))
    assert release_declared_pooling(arch, rules_for("0.29.0")) is None
    assert chunks_prefill(arch, rules_for("0.29.0"), pooling=True)
    assert declared_pooling_refusal(rules_for("0.12.0"), arch, "0.12.0", pooling=True) is None
    assert release_declared_pooling(arch, rules_for("0.30.0")) == ("MEAN", "INCLUDE")
    assert not chunks_prefill(arch, rules_for("0.30.0"), pooling=True)


def test_a_checkpoint_without_a_string_pooling_mode_reads_the_same_in_every_release(mean: Path) -> None:
    arch = architecture_from_path(mean, "m")
    assert arch.declared_pooling_mode_string is None
    for version in ("0.29.0", "0.30.0", "0.34.0"):
        assert release_declared_pooling(arch, rules_for(version)) == ("MEAN", "INCLUDE")
