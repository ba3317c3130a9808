"""What vLLM refuses before any memory is sized, in its own words (docs/vllm-memory-rules.md §12, §14)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import gpu
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.hf_config import HfConfig, context_limit
from colo.vllm.process.engine_select import v0_fallback_features
from colo.vllm.process.refusals import (
    ServerSettings,
    max_model_len_refusal,
    tensor_parallel_refusal,
    vllm_refusals,
)
from colo.vllm.rules import rules_for
from tests.vllm.helpers import process


def _features(model: str, gpu_name: str, version: str, **kwargs: object) -> list[str]:
    settings: dict[str, object] = {"pooling": False, "kv_cache_dtype": "auto", "speculative_method": None}
    settings.update(kwargs)
    return v0_fallback_features(
        rules_for(version),
        catalog_architecture(model),
        gpu(gpu_name),
        pooling=bool(settings["pooling"]),
        kv_cache_dtype=str(settings["kv_cache_dtype"]),
        speculative_method=settings["speculative_method"],  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("version", "v0"), [("0.10.0", True), ("0.10.1", False)])
def test_an_xlm_roberta_embedder_runs_v0_until_0101(version: str, v0: bool) -> None:
    features = _features("BAAI/bge-m3", "L40S", version, pooling=True)
    assert (features == ["['XLMRobertaModel']"]) is v0
    assert bool(features) is v0


@pytest.mark.parametrize(("version", "v0"), [("0.9.1", True), ("0.9.2", False)])
def test_a_causal_embedder_runs_v0_until_092(version: str, v0: bool) -> None:
    assert (_features("Qwen/Qwen3-Embedding-0.6B", "L40S", version, pooling=True) == ["--task embed"]) is v0


@pytest.mark.parametrize(
    ("version", "gpu_name", "v0"),
    [
        ("0.8.1", "H100-SXM", True),  # no fp8 KV on V1 yet
        ("0.8.2", "H100-SXM", False),  # FlashAttention 3 on compute capability 9.x
        ("0.9.2", "L40S", True),  # Ada has no FA3: fp8 KV falls back
        ("0.10.2", "L40S", True),
        ("0.11.0", "L40S", False),  # the oracle no longer looks at the KV dtype
    ],
)
def test_an_fp8_kv_cache_stays_on_v1_only_where_the_release_supports_it(
    version: str, gpu_name: str, v0: bool
) -> None:
    assert (_features("Qwen/Qwen3-8B", gpu_name, version, kv_cache_dtype="fp8") == ["--kv-cache-dtype"]) is v0


def test_gpus_below_compute_capability_8_run_v0_until_0102() -> None:
    turing = replace(gpu("L40S"), name="T4", compute_capability=(7, 5))
    arch = catalog_architecture("Qwen/Qwen3-8B")
    for version, v0 in (("0.10.1", True), ("0.10.2", False)):
        features = v0_fallback_features(
            rules_for(version), arch, turing, pooling=False, kv_cache_dtype="auto", speculative_method=None
        )
        assert (features == ["Compute Capability < 8.0"]) is v0


def test_float32_models_run_v0_until_092() -> None:
    arch = replace(catalog_architecture("Qwen/Qwen3-8B"), dtype="float32")
    for version, v0 in (("0.9.1", True), ("0.9.2", False)):
        features = v0_fallback_features(
            rules_for(version),
            arch,
            gpu("H100-SXM"),
            pooling=False,
            kv_cache_dtype="auto",
            speculative_method=None,
        )
        assert (features == ["--dtype torch.float32"]) is v0


@pytest.mark.parametrize(
    ("version", "method", "v0"),
    [("0.8.5", "eagle", True), ("0.9.0", "eagle", False), ("0.9.2", "mtp", True), ("0.10.0", "mtp", False)],
)
def test_speculative_methods_stay_on_v1_only_where_the_release_lists_them(
    version: str, method: str, v0: bool
) -> None:
    assert (
        _features("Qwen/Qwen3-8B", "H100-SXM", version, speculative_method=method) == ["Speculative Decoding"]
    ) is v0


def _settings(max_model_len: int | None, version: str = "0.20.0", allow: bool = False) -> ServerSettings:
    return ServerSettings(
        version=version, pooling=False, max_model_len=max_model_len, allow_long_max_model_len=allow
    )


def test_a_max_model_len_above_the_models_is_refused_with_vllms_text_of_the_release() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    new = max_model_len_refusal(rules_for("0.10.2"), arch, _settings(65536, "0.10.2"))
    old = max_model_len_refusal(rules_for("0.10.1.1"), arch, _settings(65536, "0.10.1.1"))
    assert new is not None and old is not None
    assert new.key == "maxModelLen"
    assert new.message.startswith(
        "ValueError: User-specified max_model_len (65536) is greater than the derived max_model_len "
        "(max_position_embeddings=40960 or model_max_length=None in model's config.json). To allow overriding "
        "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used"
    )
    assert "This may lead to incorrect model outputs or CUDA errors." in old.message


def test_the_override_variable_or_a_larger_model_max_length_lets_it_through() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    rules = rules_for("0.20.0")
    assert max_model_len_refusal(rules, arch, _settings(40960)) is None
    assert max_model_len_refusal(rules, arch, _settings(65536, allow=True)) is None
    assert max_model_len_refusal(rules, replace(arch, model_max_length=65536), _settings(65536)) is None


def test_rope_scaling_raises_the_derived_length_except_for_llama3_style_rope() -> None:
    yarn = {
        "max_position_embeddings": 40960,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    llama3 = {"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    linear = {"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "linear", "factor": 2.0}}
    assert context_limit(HfConfig.of(yarn)).derived == 131072.0
    assert context_limit(HfConfig.of(llama3)).derived == 131072
    assert context_limit(HfConfig.of(linear)).derived == 8192.0
    assert (
        context_limit(HfConfig.of({"n_positions": 2048, "max_position_embeddings": 4096})).key
        == "n_positions"
    )
    assert context_limit(HfConfig.of({})).derived == 2048


def test_vllms_default_max_model_len_is_the_derived_one() -> None:
    assert process("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM", "0.20.0").limits.max_model_len == 131072


@pytest.mark.parametrize(
    ("model", "tp", "text"),
    [
        (
            "Qwen/Qwen3-14B",
            3,
            "Total number of attention heads (40) must be divisible by tensor parallel size (3).",
        ),
        ("Qwen/Qwen2.5-7B-Instruct", 7, "AssertionError: 7 is not divisible by 4"),  # 28 heads, 4 KV heads
        ("Qwen/Qwen3-8B", 0, "tensor_parallel_size must be at least 1, got 0"),
    ],
)
def test_a_tensor_parallel_size_that_does_not_split_the_heads_is_refused(
    model: str, tp: int, text: str
) -> None:
    refusal = tensor_parallel_refusal(catalog_architecture(model), tp)
    assert refusal is not None and text in refusal.message


@pytest.mark.parametrize(
    ("model", "tp"), [("Qwen/Qwen3-30B-A3B", 8), ("Qwen/Qwen3-8B", 4), ("Qwen/Qwen3-8B", 1)]
)
def test_sizes_that_split_heads_and_kv_heads_evenly_pass(model: str, tp: int) -> None:
    assert tensor_parallel_refusal(catalog_architecture(model), tp) is None


def test_refusals_are_collected_together_with_their_keys() -> None:
    refusals = vllm_refusals(
        rules_for("0.9.1"),
        catalog_architecture("Qwen/Qwen3-Embedding-0.6B"),
        gpu("L40S"),
        ServerSettings(version="0.9.1", pooling=True, max_model_len=65536, tensor_parallel_size=3),
    )
    assert [r.key for r in refusals] == ["vllm.version", "maxModelLen", "tensorParallelSize"]
