"""The dtype vLLM runs a model in, release by release (docs/vllm-memory-rules.md §15), and what follows it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from colo.catalog import GIB, gpu
from colo.vllm import EstimateRefused, EstimateRequest, estimate
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.process.activation import sampler_profile
from colo.vllm.process.model_dtype import dtype_refusals, resolve_dtype, served_architecture
from colo.vllm.rules import measured_constants, releases, rules_for

H100 = (9, 0)
T4 = (7, 5)
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


def _config(**keys: Any) -> dict[str, Any]:
    return {**LLAMA, **keys}


def _auto(
    raw: dict[str, Any], version: str, capability: tuple[int, int] = H100, pooling: bool = False
) -> str:
    return resolve_dtype(from_hf_config(raw, "m"), None, rules_for(version), capability, pooling=pooling)


def _gemma3(dtype: str) -> dict[str, Any]:
    """A Gemma 3 multimodal config: top-level model_type gemma3, its text config gemma3_text."""
    return {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {**LLAMA, "model_type": "gemma3_text", "torch_dtype": dtype},
    }


def test_every_release_takes_vllms_six_dtype_names() -> None:
    for entry in releases():
        assert entry.dtype_names == ("auto", "half", "float16", "bfloat16", "float", "float32"), entry.label


def test_a_name_the_release_lacks_is_refused_as_its_argument_parser_refuses_it() -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    with pytest.raises(ValueError, match=r"argument --dtype: invalid choice: 'fp8'"):
        resolve_dtype(arch, "fp8", rules_for("0.20.0"), H100, pooling=False)


@pytest.mark.parametrize(
    ("flag", "dtype"), [("half", "float16"), ("float", "float32"), ("bfloat16", "bfloat16")]
)
def test_an_explicit_name_is_the_dtype_it_names(flag: str, dtype: str) -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    assert resolve_dtype(arch, flag, rules_for("0.20.0"), T4, pooling=False) == dtype


def test_auto_keeps_a_16_bit_checkpoints_dtype() -> None:
    for version in ("0.8.0", "0.9.0", "0.20.0", "0.33.0"):
        assert _auto(_config(torch_dtype="bfloat16"), version) == "bfloat16"
        assert _auto(_config(torch_dtype="float16"), version) == "float16"


@pytest.mark.parametrize(("version", "dtype"), [("0.9.0", "float16"), ("0.9.1", "bfloat16")])
def test_a_float32_checkpoint_runs_in_float16_until_0091_then_in_the_gpus_first_dtype(
    version: str, dtype: str
) -> None:
    assert _auto(_config(torch_dtype="float32"), version) == dtype


@pytest.mark.parametrize(
    ("version", "dtype"), [("0.9.0", "float16"), ("0.9.1", "float16"), ("0.33.0", "float16")]
)
def test_a_float32_pooling_checkpoint_runs_in_float16(version: str, dtype: str) -> None:
    assert _auto(_config(torch_dtype="float32"), version, pooling=True) == dtype


def test_a_config_stating_no_dtype_counts_as_float32() -> None:
    assert _auto(_config(), "0.8.4") == "float16"
    assert _auto(_config(), "0.20.0") == "bfloat16"


@pytest.mark.parametrize(("version", "dtype"), [("0.8.0", "bfloat16"), ("0.8.1", "float16")])
def test_0080_casts_float32_gemma_3_to_bfloat16_and_0081_drops_the_exception(
    version: str, dtype: str
) -> None:
    assert _auto(_gemma3("float32"), version) == dtype


@pytest.mark.parametrize(
    ("version", "dtype"), [("0.8.0", "bfloat16"), ("0.8.1", "float16"), ("0.8.5", "bfloat16")]
)
def test_where_the_dtype_is_looked_up_first_moves_between_the_text_config_and_the_root(
    version: str, dtype: str
) -> None:
    """0.8.0 reads hf_text_config; 0.8.1-0.8.4 the root first; 0.8.5 get_text_config() first; 0.9.0 the root."""
    raw = {**_gemma3("bfloat16"), "torch_dtype": "float16"}
    assert _auto(raw, version) == dtype
    assert _auto(raw, "0.9.0") == "float16"


@pytest.mark.parametrize(
    ("version", "dtype"), [("0.8.4", "float16"), ("0.8.5", "bfloat16"), ("0.9.0", "bfloat16")]
)
def test_plamo2_runs_in_bfloat16_under_auto_from_0085(version: str, dtype: str) -> None:
    raw = _config(torch_dtype="float16", model_type="plamo2", architectures=["Plamo2ForCausalLM"])
    assert _auto(raw, version) == dtype


@pytest.mark.parametrize(
    ("version", "dtype"), [("0.8.5", "bfloat16"), ("0.9.0", "float16"), ("0.20.0", "float16")]
)
def test_auto_falls_back_to_float16_on_a_gpu_without_bfloat16_from_0090(version: str, dtype: str) -> None:
    assert _auto(_config(torch_dtype="bfloat16"), version, capability=T4) == dtype


def test_auto_runs_gemma_3_in_float32_below_compute_capability_8_from_0091() -> None:
    """float16 is ruled out for the model type and bfloat16 for the GPU: float32 is what is left."""
    assert _auto(_gemma3("bfloat16"), "0.9.0", capability=T4) == "float16"
    assert _auto(_gemma3("bfloat16"), "0.9.1", capability=T4) == "float32"


def _refusals(raw: dict[str, Any], flag: str | None, version: str, gpu_name: str) -> list[str]:
    rules, spec = rules_for(version), gpu(gpu_name)
    arch = served_architecture(from_hf_config(raw, "m"), flag, rules, spec.compute_capability, pooling=False)
    return dtype_refusals(arch, rules, spec)


def test_bfloat16_below_compute_capability_8_is_refused_in_vllms_words() -> None:
    assert _refusals(_config(torch_dtype="bfloat16"), None, "0.8.5", "T4") == [
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 "
        "GPU has compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in "
        "CLI, for example: --dtype=half."
    ]
    assert _refusals(_config(torch_dtype="bfloat16"), None, "0.9.0", "T4") == []  # auto falls back
    assert _refusals(_config(torch_dtype="bfloat16"), "bfloat16", "0.33.0", "T4") != []  # asked for


@pytest.mark.parametrize(("version", "refused"), [("0.9.0", False), ("0.9.1", True), ("0.33.0", True)])
def test_float16_for_gemma_3_is_refused_from_0091(version: str, refused: bool) -> None:
    found = _refusals(_gemma3("bfloat16"), "half", version, "H100-SXM")
    expected = (
        "ValueError: The model type 'gemma3' does not support float16. Reason: Numerical instability. Please "
        "use bfloat16 or float32 instead."
    )
    assert (found == [expected]) is refused


@pytest.mark.parametrize(("version", "refused"), [("0.10.1", False), ("0.10.2", True)])
def test_the_text_only_gemma_3_joins_the_float16_list_in_0102(version: str, refused: bool) -> None:
    raw = _config(torch_dtype="bfloat16", model_type="gemma3_text", architectures=["Gemma3ForCausalLM"])
    assert bool(_refusals(raw, "float16", version, "H100-SXM")) is refused


@pytest.mark.parametrize(("version", "refused"), [("0.26.0", True), ("0.27.0", False)])
def test_plamo2_leaves_the_float16_list_in_0270(version: str, refused: bool) -> None:
    raw = _config(torch_dtype="bfloat16", model_type="plamo2", architectures=["Plamo2ForCausalLM"])
    assert bool(_refusals(raw, "float16", version, "H100-SXM")) is refused


def test_the_catalogs_gemma_3_is_known_by_its_architecture_where_its_config_names_no_model_type() -> None:
    rules = rules_for("0.20.0")
    arch = catalog_architecture("google/gemma-3-27b-it")
    served = served_architecture(arch, "half", rules, H100, pooling=False)
    assert dtype_refusals(served, rules, gpu("H100-SXM"))


# --- what follows the dtype ------------------------------------------------------------------------------


def _estimate(dtype: str | None, **fields: Any) -> Any:
    request = {
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "vllm_version": "0.19.0",
        "gpu": "H100-SXM",
        "gpu_memory_utilization": 0.95,
        "max_model_len": 8192,
        "dtype": dtype,
        **fields,
    }
    return estimate(EstimateRequest(**request))


def test_float32_doubles_the_unquantized_weights_the_rotary_cache_and_the_kv_pages() -> None:
    half, full = _estimate(None), _estimate("float32")
    assert full.arch.dtype == "float32" and full.arch.checkpoint_dtype == "bfloat16"
    assert full.budget.weights_bytes == 2 * half.budget.weights_bytes
    assert full.budget.capacity is not None and half.budget.capacity is not None
    assert full.budget.capacity.bytes_per_block == 2 * half.budget.capacity.bytes_per_block


def test_float16_sizes_like_bfloat16() -> None:
    assert _estimate("half").budget.weights_bytes == _estimate(None).budget.weights_bytes


def test_the_files_bytes_stay_in_the_checkpoints_dtype_so_exact_checkpoints_stay_exact() -> None:
    """Llama 3.1 8B's index total_size is its 8.03 B parameters in bfloat16: served in float32 it is twice that
    plus the rotary cache, with nothing the geometry failed to foresee."""
    weights = _estimate("float32").budget.weights_bytes
    rotary = 131072 * 128 * 4
    assert weights == 2 * 16_060_522_496 + rotary
    assert round(weights / GIB, 2) == 29.98


@pytest.mark.parametrize(
    ("version", "v2", "change"),
    [("0.19.0", False, -2), ("0.11.2", False, -2), ("0.25.0", True, -2), ("0.29.0", True, 2)],
)
def test_a_float32_sampler_holds_its_logits_once(version: str, v2: bool, change: int) -> None:
    """The replay's 16-bit logits and their float32 copy are one float32 tensor in a float32 model (2 bytes a
    logit less); the V2 runner's in-place sampler (0.26+) holds 4-byte logits instead of 2."""
    rules, table = rules_for(version), measured_constants().sampler_bytes_per_logit
    flags: dict[str, Any] = {"rows": 1024, "v2_runner": v2, "speculative": False, "sm_count": 132}
    half = sampler_profile(rules, table, **flags).bytes_per_logit
    assert sampler_profile(rules, table, **flags, model_dtype_bytes=4).bytes_per_logit == half + change


def test_a_gated_deltanet_state_follows_the_model_dtype_unless_the_config_states_its_own() -> None:
    arch = catalog_architecture("Qwen/Qwen3.6-27B")
    assert arch.gdn is not None
    stated = served_architecture(arch, "float32", rules_for("0.20.0"), H100, pooling=False)
    assert stated.gdn is not None
    unstated = replace(arch, gdn=replace(arch.gdn, ssm_dtype_stated=False))
    served = served_architecture(unstated, "float32", rules_for("0.20.0"), H100, pooling=False)
    assert served.gdn is not None and served.gdn.ssm_dtype_bytes == 4
    assert stated.gdn.ssm_dtype_bytes == arch.gdn.ssm_dtype_bytes


def test_float32_on_0091_runs_the_v0_engine_which_colo_refuses() -> None:
    with pytest.raises(EstimateRefused, match=r"--dtype torch.float32 is not supported by the V1 Engine"):
        _estimate("float32", vllm_version="0.9.1")
    assert _estimate("float32", vllm_version="0.9.2").arch.dtype == "float32"


def test_an_estimate_of_bfloat16_on_a_t4_names_the_dtype_flag() -> None:
    with pytest.raises(EstimateRefused) as refused:
        _estimate("bfloat16", gpu="T4", vllm_version="0.20.0", gpu_memory_utilization=0.9, max_model_len=2048)
    assert refused.value.field == "dtype"
    assert "Bfloat16 is only supported" in refused.value.message
