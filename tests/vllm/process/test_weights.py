"""Weight bytes from geometry agree with the checkpoints' own safetensors totals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import GIB, gpu
from colo.catalog.models import catalog_ids
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.checkpoint.quant_methods import QuantizationRefused
from colo.vllm.process.weights import estimate_weights
from tests.model_files import TINY_CONFIG

WITH_EXACT_BYTES = [m for m in catalog_ids() if catalog_architecture(m).checkpoint_bytes]


@pytest.mark.parametrize("model", WITH_EXACT_BYTES)
def test_geometry_estimate_matches_the_published_checkpoint_size(model: str) -> None:
    arch = catalog_architecture(model)
    assert arch.checkpoint_bytes is not None
    from_geometry = estimate_weights(replace(arch, checkpoint_bytes=None, checkpoint_bytes_by_part={}))
    # Rotary caches and vocabulary padding are the only on-GPU additions: well under 0.5 %.
    assert from_geometry.bytes == pytest.approx(arch.checkpoint_bytes, rel=0.005)


def _geometry_only(model: str) -> ModelArchitecture:
    return replace(catalog_architecture(model), checkpoint_bytes=None, checkpoint_bytes_by_part={})


def test_fp8_quantizes_linear_layers_but_keeps_embeddings_in_bf16() -> None:
    bf16 = estimate_weights(_geometry_only("Qwen/Qwen3-8B"))
    fp8 = estimate_weights(catalog_architecture("Qwen/Qwen3-8B-FP8"))
    assert fp8.detail["embedding"] == bf16.detail["embedding"]
    assert fp8.detail["mlp"] == pytest.approx(bf16.detail["mlp"] / 2, rel=0.01)
    assert 8 * GIB < fp8.bytes < 9.5 * GIB


def test_mtp_layers_load_only_with_mtp_speculation() -> None:
    arch = catalog_architecture("Qwen/Qwen3.6-27B")
    assert estimate_weights(arch, load_mtp=True).bytes > estimate_weights(arch).bytes


def test_embedding_servers_skip_an_untied_lm_head() -> None:
    geometry = _geometry_only("Qwen/Qwen3-8B")
    assert estimate_weights(geometry, pooling=True).detail["lm_head"] == 0
    assert estimate_weights(geometry).detail["lm_head"] > 0
    exact = catalog_architecture("Qwen/Qwen3-8B")
    with_head, without = estimate_weights(exact), estimate_weights(exact, pooling=True)
    skipped = with_head.bytes - with_head.detail["allocator_blocks"]
    skipped -= without.bytes - without.detail["allocator_blocks"]
    assert skipped == 151936 * 4096 * 2


def test_qwen36_27b_parameter_count_matches_its_checkpoint() -> None:
    # 27,781,427,952 parameters including the vision tower and one MTP layer (docs/sources/model-configs.yaml).
    params = estimate_weights(catalog_architecture("Qwen/Qwen3.6-27B"), load_mtp=True).parameters
    assert params == pytest.approx(27_781_427_952, rel=0.001)


# --- per tensor-parallel rank ---------------------------------------------------------------------------------

MLA_MOE = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "intermediate_size": 2048,
    "moe_intermediate_size": 512,
    "n_routed_experts": 16,
    "n_shared_experts": 1,
    "num_experts_per_tok": 4,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 256,
    "q_lora_rank": 384,
    "qk_rope_head_dim": 32,
    "qk_nope_head_dim": 64,
    "v_head_dim": 64,
    "num_nextn_predict_layers": 1,
    "vocab_size": 1000,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}


def _mla_moe(**extra: object) -> ModelArchitecture:
    return from_hf_config({**MLA_MOE, **extra}, "test/mla-moe")


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_replicated_parts_stay_whole_and_sharded_parts_split_on_every_rank(tp: int) -> None:
    arch = _mla_moe()
    one, rank = estimate_weights(arch), estimate_weights(arch, tensor_parallel_size=tp)
    assert rank.detail["router"] == one.detail["router"]  # MoE routers are ReplicatedLinear
    assert rank.detail["experts"] * tp == one.detail["experts"]
    assert rank.detail["mlp"] * tp == one.detail["mlp"]
    # MLA's q_a / kv_a projections are replicated: attention shrinks by less than N.
    h, m = 1024, arch.mla
    assert m is not None and m.q_lora_rank
    replicated = 4 * h * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) * 2
    assert rank.detail["attention"] == replicated + (one.detail["attention"] - replicated) // tp


def test_the_vocabulary_is_padded_to_64_then_split() -> None:
    arch = _mla_moe()
    for tp in (1, 2, 8):
        assert estimate_weights(arch, tensor_parallel_size=tp).detail["embedding"] == 1024 * 1024 * 2 // tp


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_kv_projections_are_replicated_once_the_ranks_outnumber_kv_heads(tp: int) -> None:
    config = {**TINY_CONFIG, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2}
    arch = from_hf_config(config, "test/gqa")
    head_dim = 64
    kv_heads_per_rank = max(1, 2 // tp)
    qkv = 512 * (8 * head_dim // tp + 2 * kv_heads_per_rank * head_dim)
    o_proj = 8 * head_dim // tp * 512
    layers, bf16 = 2, 2
    assert estimate_weights(arch, tensor_parallel_size=tp).detail["attention"] == layers * bf16 * (
        qkv + o_proj
    )


def test_a_quantized_mla_kv_b_proj_adds_its_bf16_copy() -> None:
    fp8 = _mla_moe(
        quantization_config={
            "quant_method": "fp8",
            "activation_scheme": "dynamic",
            "weight_block_size": [128, 128],
        }
    )
    m = fp8.mla
    assert m is not None
    copy = 4 * m.kv_lora_rank * 16 * (m.qk_nope_head_dim + m.v_head_dim) * 2
    assert estimate_weights(fp8).detail["mla_dense_copy"] == copy
    assert estimate_weights(fp8, tensor_parallel_size=4).detail["mla_dense_copy"] == copy // 4
    assert estimate_weights(_mla_moe()).detail["mla_dense_copy"] == 0


def test_mtp_layers_in_a_total_size_are_taken_out_unless_mtp_speculation_loads_them() -> None:
    arch = _mla_moe(vocab_size=1024)  # no vocabulary padding: the file holds what the GPU holds, less rotary
    geometry_with_mtp = estimate_weights(arch, load_mtp=True)
    total = (
        geometry_with_mtp.bytes
        - geometry_with_mtp.detail["rotary"]
        - geometry_with_mtp.detail["allocator_blocks"]
    )
    exact = replace(arch, checkpoint_bytes=total, checkpoint_bytes_by_part={"model": total})
    assert estimate_weights(exact).bytes == pytest.approx(estimate_weights(arch).bytes, rel=1e-6)
    assert estimate_weights(exact, load_mtp=True).bytes == pytest.approx(geometry_with_mtp.bytes, rel=1e-6)


def test_online_fp8_halves_the_linear_layers_and_keeps_embeddings() -> None:
    bf16 = _geometry_only("Qwen/Qwen3-8B")
    fp8 = estimate_weights(bf16.with_quantization("fp8_per_tensor"))
    plain = estimate_weights(bf16)
    assert fp8.quantization == "fp8_per_tensor"
    assert fp8.detail["embedding"] == plain.detail["embedding"]
    assert fp8.detail["mlp"] == pytest.approx(plain.detail["mlp"] / 2, rel=0.001)


GPT_OSS = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "num_hidden_layers": 2,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 2880,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4"},
}


@pytest.mark.parametrize(
    ("gpu_name", "capability", "version", "hidden", "inter"),
    [
        ("A100", (8, 0), "0.19.0", 3072, 2944),  # Marlin: intermediate to 128, hidden to 256
        ("H100-SXM", (9, 0), "0.10.1", 3072, 2944),  # torch 2.7.1: Marlin on Hopper too
        ("H100-SXM", (9, 0), "0.11.0", 3072, 2944),  # torch 2.8.0, but no triton_kernels: Marlin
        ("H100-SXM", (9, 0), "0.11.2", 3072, 2944),  # torch 2.9.0, still no triton_kernels: Marlin
        ("H100-SXM", (9, 0), "0.12.0", 3072, 2880),  # vendored triton_kernels: Triton, swizzled
        ("H100-SXM", (9, 0), "0.14.0", 3072, 2880),  # Triton, swizzled (log-informed padding)
        ("B200", (10, 0), "0.14.0", 3072, 3072),  # FlashInfer: both to 256
    ],
)
def test_gpt_oss_experts_are_padded_by_the_mxfp4_backend_of_gpu_and_release(
    gpu_name: str, capability: tuple[int, int], version: str, hidden: int, inter: int
) -> None:
    arch = from_hf_config(GPT_OSS, "openai/gpt-oss")
    spec = replace(gpu("H100-SXM"), name=gpu_name, compute_capability=capability)
    experts = estimate_weights(arch, gpu=spec, vllm_version=version).detail["experts"]
    weights = 3 * hidden * inter
    bias = 4 if (gpu_name, version) in {("H100-SXM", "0.12.0"), ("H100-SXM", "0.14.0")} else 2
    assert experts == 2 * 32 * (weights // 2 + weights // 32 + bias * (2 * inter + hidden))


def test_gpt_oss_linear_layers_stay_bf16() -> None:
    arch = from_hf_config(GPT_OSS, "openai/gpt-oss")
    plain = from_hf_config({k: v for k, v in GPT_OSS.items() if k != "quantization_config"}, "bf16")
    assert estimate_weights(arch).detail["attention"] == estimate_weights(plain).detail["attention"]


def test_a_refused_quantization_is_not_sized() -> None:
    with pytest.raises(QuantizationRefused):
        estimate_weights(_geometry_only("Qwen/Qwen3-8B").with_quantization("awq"))


def test_a_vision_tower_shards_its_linears_like_the_decoder() -> None:
    arch = catalog_architecture("Qwen/Qwen3.6-27B")
    one, two = estimate_weights(arch), estimate_weights(arch, tensor_parallel_size=2)
    assert one.detail["vision"] > 0
    assert two.detail["vision"] == one.detail["vision"] // 2


def test_equal_questions_get_the_same_answer_and_a_changed_checkpoint_a_new_one() -> None:
    """The planner asks for one process's weights many times; the answer is computed once per distinct
    architecture, GPU capability, rank count and release — and a different checkpoint is never mistaken for it."""
    arch = catalog_architecture("Qwen/Qwen3-8B")
    first = estimate_weights(arch, gpu=gpu("L40S"), vllm_version="0.20.0")
    again = estimate_weights(replace(arch), gpu=gpu("L40S"), vllm_version="0.20.0")
    assert again is first
    other_bytes = replace(arch, checkpoint_bytes=(arch.checkpoint_bytes or 0) + 2**30)
    assert estimate_weights(other_bytes, gpu=gpu("L40S"), vllm_version="0.20.0").bytes != first.bytes
    assert (
        estimate_weights(arch, gpu=gpu("L40S"), vllm_version="0.20.0", tensor_parallel_size=2).bytes
        < first.bytes
    )


def test_gemma3s_scaled_global_rope_and_its_local_rope_each_hold_a_cache() -> None:
    """Linear scaling builds max_position x factor rows (linear_scaling_rope.py::_compute_cos_sin_cache); the
    sliding layers' own base builds a second cache of max_position rows (gemma3.py::Gemma3Attention)."""
    from tests.vllm.checkpoint.test_config_defaults import GEMMA3_4B

    arch = from_hf_config(GEMMA3_4B, "google/gemma-3-4b-it")
    assert arch.rotary_cache_rows == (131072 * 8, 131072)
    assert estimate_weights(arch).detail["rotary"] == (131072 * 9) * 256 * 2


@pytest.mark.parametrize(
    ("rope_scaling", "rows"),
    [
        (None, 2048),
        ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 1024}, 2048),
        ({"rope_type": "dynamic", "factor": 2.0}, 4096),
        ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}, 2048),
    ],
)
def test_one_rotary_cache_of_the_rows_its_rope_type_builds(rope_scaling: object, rows: int) -> None:
    arch = from_hf_config({**TINY_CONFIG, "rope_scaling": rope_scaling}, "test/rope")
    assert arch.rotary_cache_rows == (rows,)
    assert estimate_weights(arch, vllm_version="0.21.0").detail["rotary"] == rows * 16 * 2


@pytest.mark.parametrize(
    ("version", "rows"), [("0.8.0", 4096), ("0.21.0", 4096), ("0.22.0", 2048), ("0.34.0", 2048)]
)
def test_a_dynamic_ntk_cache_keeps_max_position_rows_from_0_22(version: str, rows: int) -> None:
    """Up to 0.21.0 DynamicNTKScalingRotaryEmbedding._compute_cos_sin_cache builds max_position x factor rows;
    from 0.22.0 max_position rows, the factor only raising the base."""
    arch = from_hf_config(
        {**TINY_CONFIG, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "test/ntk"
    )
    assert estimate_weights(arch, vllm_version=version).detail["rotary"] == rows * 16 * 2


@pytest.mark.parametrize(
    ("rope_scaling", "rows"),
    [
        ({"rope_type": "linear", "factor": 2.0}, 4096),
        ({"rope_type": "dynamic", "alpha": 1000.0}, 2048),
        ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}, 2048),
        ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 1024}, 2048),
    ],
)
@pytest.mark.parametrize("version", ["0.21.0", "0.22.0", "0.34.0"])
def test_the_other_scaled_ropes_keep_their_rows_across_0_22(
    rope_scaling: object, rows: int, version: str
) -> None:
    """Linear (factor x max_position), dynamic NTK alpha and Llama 3 (max_position) and YaRN (its original
    length x factor) build the same cache in every release."""
    arch = from_hf_config({**TINY_CONFIG, "rope_scaling": rope_scaling}, "test/rope")
    assert estimate_weights(arch, vllm_version=version).detail["rotary"] == rows * 16 * 2


def test_a_float32_label_on_16_bit_files_is_read_by_the_files_bytes() -> None:
    """vLLM runs a float32-labelled checkpoint in 16 bits; whether its files hold 2 or 4 bytes a parameter,
    the weights on the GPU are the same."""
    arch = from_hf_config({**TINY_CONFIG, "torch_dtype": "float32"}, "test/fp32-label").served_in("bfloat16")
    geometry = estimate_weights(arch)
    parameters = geometry.parameters
    as_16_bit = replace(
        arch, checkpoint_bytes=2 * parameters, checkpoint_bytes_by_part={"model": 2 * parameters}
    )
    as_32_bit = replace(
        arch, checkpoint_bytes=4 * parameters, checkpoint_bytes_by_part={"model": 4 * parameters}
    )
    assert estimate_weights(as_16_bit).bytes == estimate_weights(as_32_bit).bytes == geometry.bytes
