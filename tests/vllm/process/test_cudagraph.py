"""CUDA-graph memory: which graphs vLLM captures, what holds their memory, and what its profile estimates
(docs/vllm-memory-rules.md §5, §5a)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from colo.catalog import GIB, MIB
from colo.vllm.calibration import CalibrationEntry
from colo.vllm.checkpoint.architecture import MlaGeometry, ModelArchitecture
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.checkpoint.quant_methods import quant_release
from colo.vllm.checkpoint.quantization import QuantizationScheme
from colo.vllm.process.budget import ProcessBudget, size_process
from colo.vllm.process.calibrated import calibrated
from colo.vllm.process.cudagraph import (
    CUBLAS_WORKSPACE_OLDER,
    CUBLAS_WORKSPACE_SM90,
    GraphPlan,
    GraphSetting,
    cublas_workspace_bytes,
    fa3_accumulator_bytes,
    graph_memory,
    kib_per_graph_field,
    layer_kernels,
    piece_pool_bytes,
)
from colo.vllm.process.quant_bytes import Layout
from colo.vllm.rules import measured_constants, releases, rules_for
from tests.vllm.helpers import process, sized

EMBEDDING = "Qwen/Qwen3-Embedding-0.6B"
DENSE = "Qwen/Qwen3-32B"
MOE = "Qwen/Qwen3-30B-A3B"
FP8 = "Qwen/Qwen3-32B-FP8"
MOE_FP8 = "Qwen/Qwen3-30B-A3B-FP8"
CHANNEL_FP8 = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
HYBRID_FP8 = "Qwen/Qwen3.6-27B-FP8"
HOPPER = (9, 0)
ADA = (8, 9)


def _h200(model: str, **kwargs: object) -> ProcessBudget:
    return sized(model, "H200", "0.22.0", max_num_batched_tokens=8192, **kwargs)


def _graphs(
    model: str, version: str = "0.22.0", *, v2_runner: bool = False, profiled: bool = False
) -> GraphPlan:
    """The 51 default sizes at 1024 sequences on Hopper."""
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]
    setting = GraphSetting(1024, compute_capability=HOPPER, v2_runner=v2_runner, profiled=profiled)
    return graph_memory(catalog_architecture(model), rules_for(version), sizes, setting, measured_constants())


# --- which graphs


def test_no_release_captures_full_graphs_for_a_pooling_model() -> None:
    assert all(not r.full_cudagraphs_for_pooling for r in releases())


@pytest.mark.parametrize(("seqs", "graphs", "largest"), [(64, 19, 128), (16, 7, 32)])
def test_a_pooling_model_captures_one_piecewise_graph_per_size_up_to_twice_its_sequences(
    seqs: int, graphs: int, largest: int
) -> None:
    # vLLM 0.22.0 on the H200: "Profiling CUDA graph memory: PIECEWISE=19 (largest=128)", "=7 (largest=32)"
    b = sized(EMBEDDING, "H200", "0.22.0", pooling=True, max_num_seqs=seqs, max_num_batched_tokens=8192)
    assert (b.graphs.piecewise, b.graphs.full, b.graphs.largest) == (graphs, 0, largest)


def test_the_same_model_generating_adds_full_decode_graphs_up_to_its_sequences() -> None:
    b = sized(EMBEDDING, "H200", "0.22.0", max_num_seqs=64, max_num_batched_tokens=8192)
    assert (b.graphs.piecewise, b.graphs.full) == (19, 11)  # FULL for 1, 2, 4, 8 .. 64


@pytest.mark.parametrize(("version", "full"), [("0.10.2", 0), ("0.11.0", 51)])
def test_full_decode_graphs_arrive_with_full_and_piecewise_in_011(version: str, full: int) -> None:
    assert _graphs(DENSE, version).full == full


def test_a_piecewise_size_is_one_graph_per_layer_piece_and_a_full_size_one_graph() -> None:
    plan = _graphs(DENSE)
    assert plan.executables == 51 * (64 + 1) + 51


# --- what holds the memory


def test_cublas_gives_a_new_stream_a_32_mib_workspace_from_hopper_and_8_mib_before() -> None:
    assert cublas_workspace_bytes(HOPPER) == CUBLAS_WORKSPACE_SM90 == 32 * MIB
    assert cublas_workspace_bytes((8, 0)) == CUBLAS_WORKSPACE_OLDER < 9 * MIB


def test_fa3_accumulators_are_splits_tokens_heads_and_head_dim_in_fp32_on_hopper_only() -> None:
    arch = catalog_architecture(DENSE)  # 64 query heads of 128
    rules = rules_for("0.22.0")
    assert fa3_accumulator_bytes(arch, rules, 512, GraphSetting(1024, compute_capability=HOPPER)) == 512 * MIB
    half = fa3_accumulator_bytes(
        arch, rules, 512, GraphSetting(1024, compute_capability=HOPPER, tensor_parallel_size=2)
    )
    assert half == 256 * MIB  # the heads are split across ranks
    assert fa3_accumulator_bytes(arch, rules, 512, GraphSetting(1024, compute_capability=(8, 0))) == 0


@pytest.mark.parametrize(("version", "splits"), [("0.10.2", 16), ("0.11.0", 32), ("0.33.0", 32)])
def test_fa3_splits_its_kv_into_16_parts_under_graphs_before_011_and_32_after(
    version: str, splits: int
) -> None:
    assert rules_for(version).fa3_cudagraph_splits == splits


def test_a_mla_model_holds_no_fa3_accumulators() -> None:
    # MLA layers run their own kernels (FlashMLA and kin), not FA3's split-KV path
    arch = replace(catalog_architecture(DENSE), mla=MlaGeometry(kv_lora_rank=512, qk_rope_head_dim=64))
    assert (
        fa3_accumulator_bytes(arch, rules_for("0.22.0"), 512, GraphSetting(1024, compute_capability=HOPPER))
        == 0
    )


def test_a_piece_between_1_and_10_mib_takes_a_20_mib_segment_and_smaller_ones_share_2_mib_segments() -> None:
    arch = catalog_architecture(EMBEDDING)  # gate_up output: 1.5 MiB at 128 tokens, 0.375 MiB at 32
    factor = measured_constants().cudagraph_pool_mlp_factor
    assert piece_pool_bytes(arch, 128, 1, factor) == 22 * MIB
    assert piece_pool_bytes(arch, 32, 1, factor) == 4 * MIB


def test_a_gated_deltanet_model_pools_its_mlp_with_the_projection_z_keeps_or_its_input_projection() -> None:
    # Qwen3.6-27B at 512 tokens: the MLP's 51 MiB (3 x 17408 bf16 columns) plus in_proj_qkvz's output, 16 MiB
    # (2 x 2048 + 2 x 6144 columns), which z keeps alive through the piece after the GDN core op; twice that
    # and a small segment
    arch = catalog_architecture(HYBRID_FP8)
    factor = measured_constants().cudagraph_pool_mlp_factor
    assert piece_pool_bytes(arch, 512, 1, factor) == (2 * (51 + 16) + 2) * MIB
    # a narrow MLP: the input projection's tensors at the split (qkvz 16 MiB, in_proj_ba's output and b, a
    # 2 x 96 KiB, core_attn_out 6 MiB) are the piece's peak
    narrow = replace(arch, intermediate_size=1024)
    live = 16 * MIB + 2 * 96 * 1024 + 6 * MIB
    assert piece_pool_bytes(narrow, 512, 1, factor) == -(-factor * live // (2 * MIB)) * 2 * MIB + 2 * MIB
    # without its linear-attention layers the same geometry pools its MLP alone, as before
    dense = replace(arch, linear_attention_layers=0, gdn=None)
    assert piece_pool_bytes(dense, 512, 1, factor) == (2 * 51 + 2) * MIB


def _kernels_per_layer(
    model: str | ModelArchitecture,
    capability: tuple[int, int] = HOPPER,
    version: str = "0.22.0",
    *,
    flashinfer: bool = False,
) -> float:
    """Kernels per layer; without FlashInfer unless asked, so that Hopper keeps the DeepGEMM / CUTLASS path, whose
    quantizations the fusion passes see."""
    arch = catalog_architecture(model) if isinstance(model, str) else model
    k = measured_constants().cudagraph_kernels
    kernels = layer_kernels(arch, k, capability, quant_release(version), flashinfer=flashinfer)
    return kernels / arch.num_layers


def _per_tensor(model: str) -> ModelArchitecture:
    """The checkpoint with its FP8 weights scaled per tensor (one scale per linear)."""
    arch = catalog_architecture(model)
    group = arch.quant_scheme.groups[0]
    weights = replace(group.weights, strategy="tensor", block=(0, 0))
    scheme: QuantizationScheme = replace(arch.quant_scheme, groups=(replace(group, weights=weights),))
    return replace(arch, quant_scheme=scheme)


def test_a_dense_bf16_layer_keeps_twelve_kernels() -> None:
    # two norms, qkv, q/k norm with rotary (two), o_proj, the attention op (three), gate_up, SiLU-and-mul, down
    assert _kernels_per_layer(DENSE) == _kernels_per_layer(EMBEDDING) == 12


def test_a_sparse_mlp_launches_router_routing_and_fused_experts_in_place_of_three_kernels() -> None:
    # router GEMM, topk_softmax, moe_align_block_size (two above 64 experts), w13, silu_and_mul, w2, moe_sum
    assert _kernels_per_layer(MOE) == 12 - 3 + 8


def test_block_fp8_adds_the_quantization_no_fusion_pass_absorbs_and_none_where_marlin_runs_it() -> None:
    # RMSNorm+quant and SiLU-and-mul+quant fuse; o_proj's input, the attention op's output, is quantized alone
    assert _kernels_per_layer(FP8) == 13
    assert _kernels_per_layer(FP8, (8, 0)) == 12  # weight-only Marlin below compute capability 8.9


def test_an_ada_block_fp8_model_counts_no_activation_quantization_where_its_release_runs_marlin_there() -> (
    None
):
    # 0.29+ (fp8_block_marlin_below 90): block-FP8 linears on 8.9 take Marlin, weight-only on bf16 input (vllm
    # 0.34.0 kernels/linear/__init__.py::_POSSIBLE_FP8_BLOCK_KERNELS, utils/marlin_utils_fp8.py::
    # apply_fp8_marlin_linear): the bf16 layer's 12; before (Marlin refuses 8.9), the o_proj quantization too
    assert (
        quant_release("0.34.0").fp8_block_marlin_below == quant_release("0.29.0").fp8_block_marlin_below == 90
    )
    assert _kernels_per_layer(FP8, ADA, "0.29.0") == _kernels_per_layer(FP8, ADA, "0.34.0") == 12
    assert _kernels_per_layer(FP8, ADA, "0.28.0") == _kernels_per_layer(FP8, ADA, "0.22.0") == 13


def test_hopper_without_flashinfer_counts_the_block_fp8_activation_quantization_in_every_release() -> None:
    # the 9.0 block kernels (DeepGEMM, CUTLASS) come before Marlin in every list: W8A8, the input quantized
    for version in ("0.22.0", "0.28.0", "0.29.0", "0.34.0"):
        assert _kernels_per_layer(FP8, HOPPER, version) == 13


@pytest.mark.parametrize("version", ["0.17.0", "0.22.0", "0.34.0"])
def test_hopper_with_flashinfer_quantizes_every_block_fp8_linears_input_inside_its_gemm_op(
    version: str,
) -> None:
    # FlashInferFp8DeepGEMMDynamicBlockScaledKernel (apply_input_quant False) leaves no QuantFP8 op for the norm
    # or SiLU-and-mul fusion, and quantizes its bf16 input in a kernel of its own: qkv, o_proj, gate_up, down
    assert _kernels_per_layer(FP8, HOPPER, version, flashinfer=True) == 12 + 4
    # its Gemma-normed hybrid: in_proj_qkvz / qkv, out_proj / o_proj, gate_up and down_proj, two kernels more
    # than the fused count below
    arch = catalog_architecture(HYBRID_FP8)
    fused = _kernels_per_layer(arch, HOPPER, version)
    assert _kernels_per_layer(arch, HOPPER, version, flashinfer=True) == fused + 1
    # a sparse layer's fused experts take their own kernels, unchanged: only its attention's two
    assert (
        _kernels_per_layer(MOE_FP8, HOPPER, version, flashinfer=True)
        == _kernels_per_layer(MOE, HOPPER) + 2 + 1
    )


def test_flashinfers_block_fp8_gemm_is_hoppers_alone_from_0_17_and_only_where_the_image_carries_it() -> None:
    # VLLM_BLOCKSCALE_FP8_GEMM_FLASHINFER defaults to 0 up to 0.16; has_flashinfer_fp8_blockscale_gemm wants
    # compute capability 9.0 exactly
    assert not quant_release("0.16.0").fp8_block_flashinfer
    assert quant_release("0.17.0").fp8_block_flashinfer and quant_release("0.34.0").fp8_block_flashinfer
    assert _kernels_per_layer(FP8, HOPPER, "0.16.0", flashinfer=True) == 13
    assert _kernels_per_layer(FP8, (10, 0), "0.34.0", flashinfer=True) == 13
    assert _kernels_per_layer(FP8, HOPPER, "0.34.0", flashinfer=False) == 13
    # per-tensor and per-channel FP8 take the scaled_mm kernels, never this one
    assert _kernels_per_layer(catalog_architecture(CHANNEL_FP8), HOPPER, "0.34.0", flashinfer=True) == 12 + 2


def test_a_graph_plan_on_hopper_counts_flashinfers_quantizations_where_the_image_carries_flashinfer() -> None:
    arch = catalog_architecture(FP8)
    rules, consts, sizes = rules_for("0.22.0"), measured_constants(), [1, 2, 4, 8]
    plans = [
        graph_memory(arch, rules, sizes, GraphSetting(8, compute_capability=HOPPER, flashinfer=f), consts)
        for f in (True, False)
    ]
    assert plans[0].bytes > plans[1].bytes


def test_a_shared_expert_quantizes_its_gate_up_and_down_inputs_in_the_opaque_moe_op() -> None:
    # Qwen3.6-35B-A3B-FP8: the shared expert's gate_up and down are block FP8 like the dense MLP's, but run
    # inside vllm::moe_forward_shared, where no fusion pass reaches: two quantizations per sparse layer, on
    # FlashInfer or not, and none where Marlin runs the linears (8.0)
    fp8 = catalog_architecture("Qwen/Qwen3.6-35B-A3B-FP8")
    assert fp8.moe is not None and fp8.moe.shared_expert_intermediate_size
    bf16 = replace(fp8, quant_scheme=QuantizationScheme())
    without_shared = replace(fp8, moe=replace(fp8.moe, shared_expert_intermediate_size=0))
    k = measured_constants().cudagraph_kernels
    for flashinfer in (True, False):
        with_it = layer_kernels(fp8, k, HOPPER, quant_release("0.22.0"), flashinfer=flashinfer)
        without = layer_kernels(without_shared, k, HOPPER, quant_release("0.22.0"), flashinfer=flashinfer)
        assert with_it - without == fp8.num_layers * (k.shared_expert + 2)
    assert _kernels_per_layer(fp8, (8, 0)) == _kernels_per_layer(
        bf16, (8, 0)
    )  # linears and experts on Marlin


def test_an_ada_block_fp8_moe_quantizes_its_experts_input_where_its_linears_take_marlin() -> None:
    # fused-MoE experts keep Triton W8A8 on 8.9 (vllm 0.34.0 fused_moe/oracle/fp8.py: TRITON before MARLIN,
    # TritonExperts._supports_quant_scheme takes block FP8 where the platform supports FP8): one quantization
    # per sparse layer; o_proj's goes with its linears to Marlin from 0.29
    bf16 = _kernels_per_layer(MOE, ADA)
    assert _kernels_per_layer(MOE_FP8, ADA, "0.29.0") == bf16 + 1
    assert (
        _kernels_per_layer(MOE_FP8, ADA, "0.28.0")
        == _kernels_per_layer(MOE_FP8, HOPPER, "0.34.0")
        == bf16 + 2
    )


@pytest.mark.parametrize("version", ["0.22.0", "0.28.0", "0.29.0", "0.34.0"])
def test_per_tensor_and_per_channel_fp8_on_ada_keep_their_activation_quantization_in_every_release(
    version: str,
) -> None:
    # CUTLASS's scaled_mm takes FP8 on 8.9 before Marlin (0.34.0 _POSSIBLE_FP8_KERNELS); o_proj and down_proj
    for model in (_per_tensor(FP8), catalog_architecture(CHANNEL_FP8)):
        assert _kernels_per_layer(model, ADA, version) == 12 + 2
        assert _kernels_per_layer(model, (8, 6), version) == 12


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)])
def test_the_graph_kernels_quantize_activations_exactly_where_the_weight_layout_leaves_fp8_off_marlin(
    capability: tuple[int, int],
) -> None:
    arch = catalog_architecture(MOE_FP8)
    weights = arch.quant_scheme.primary
    assert weights is not None
    bf16 = _kernels_per_layer(MOE, capability)
    for version in ("0.8.0", "0.9.0", "0.22.0", "0.28.0", "0.29.0", "0.34.0"):
        layout = Layout("fp8", quant_release(version), capability[0] * 10 + capability[1], 2)
        expected = bf16 + (not layout.fp8_marlin(weights)) + (not layout.fp8_marlin(weights, experts=True))
        assert _kernels_per_layer(MOE_FP8, capability, version) == expected


def test_a_hybrid_fp8_layer_counts_its_mixer_and_its_gemma_norms_unfused_quantization() -> None:
    arch = catalog_architecture(HYBRID_FP8)
    assert (arch.num_layers, arch.linear_attention_layers) == (64, 48)
    # Gated DeltaNet: 2 norms + 8 mixer + 3 MLP + qkvz, out_proj and gate_up quantized alone; gated attention:
    # 2 + 7 + 1 gate + 3 + qkv, o_proj and gate_up (without FlashInfer; with it, down_proj's too)
    k, release = measured_constants().cudagraph_kernels, quant_release("0.22.0")
    total = layer_kernels(arch, k, HOPPER, release, flashinfer=False)
    assert total == 48 * (2 + 8 + 3 + 3) + 16 * (2 + 7 + 1 + 3 + 3)
    assert layer_kernels(arch, k, HOPPER, release) == total + 64


def test_the_driver_memory_per_graph_is_hoppers_measured_figure_on_hopper_only() -> None:
    assert kib_per_graph_field(HOPPER) == "cudagraph_kib_per_graph_layer"
    assert (
        kib_per_graph_field((8, 9))
        == kib_per_graph_field((10, 0))
        == "cudagraph_kib_per_graph_layer_other_gpus"
    )
    consts = measured_constants()
    assert consts.cudagraph_kib_per_graph_layer < consts.cudagraph_kib_per_graph_layer_other_gpus


def test_a_calibrated_graph_figure_replaces_the_constant_of_its_gpus_kind() -> None:
    entry = CalibrationEntry(gpu="H100-SXM", vllm_version="0.22.0", cudagraph_kib_per_graph_layer=150)
    hopper = calibrated(process(DENSE, "H100-SXM", "0.22.0"), entry, "c.yaml").constants
    entry = CalibrationEntry(gpu="A100-80GB", vllm_version="0.22.0", cudagraph_kib_per_graph_layer=300)
    ampere = calibrated(process(DENSE, "A100-80GB", "0.22.0"), entry, "c.yaml").constants
    assert hopper is not None and ampere is not None
    assert hopper.cudagraph_kib_per_graph_layer == 150
    assert ampere.cudagraph_kib_per_graph_layer_other_gpus == 300
    assert ampere.cudagraph_kib_per_graph_layer == measured_constants().cudagraph_kib_per_graph_layer


# --- vLLM's estimate and the capture


def test_the_capture_takes_more_than_the_estimate_when_full_graphs_need_fa3_accumulators() -> None:
    # the profile overlays the modes' first captures; the capture needs the accumulators beside the pool
    b = _h200(MOE)
    assert b.graphs.bytes > b.graphs.estimate_bytes


def test_the_capture_takes_less_than_the_estimate_when_the_driver_reuses_the_profiles_graphs() -> None:
    b = _h200(EMBEDDING, pooling=True, max_num_seqs=16)
    assert b.graphs.bytes < b.graphs.estimate_bytes
    # ... and the process still holds them: what the profile left is resident beside what the capture took
    assert b.graphs.resident_bytes > b.graphs.estimate_bytes


@pytest.mark.parametrize(("version", "profiled"), [("0.17.1", False), ("0.18.0", True)])
def test_nothing_is_left_by_a_profile_before_018(version: str, profiled: bool) -> None:
    b = sized(DENSE, "H200", version, max_num_batched_tokens=8192)
    assert (b.graphs.retained_bytes > 0) is profiled


def test_an_encoder_only_model_has_no_profile_so_its_capture_reuses_nothing() -> None:
    b = sized("BAAI/bge-m3", "H200", "0.22.0", pooling=True)
    assert b.capacity is None  # no KV cache: determine_available_memory, and the graph profile, never run
    assert b.graphs.count > 0 and b.graphs.retained_bytes == 0


@pytest.mark.parametrize(("version", "on_torch_stream"), [("0.28.0", True), ("0.29.0", False)])
def test_the_v2_runner_captures_full_graphs_on_pytorchs_stream_until_029(
    version: str, on_torch_stream: bool
) -> None:
    assert rules_for(version).v2_full_graphs_on_torch_stream is on_torch_stream


def test_v2_full_graphs_on_pytorchs_stream_need_their_own_workspace_pool_and_accumulators() -> None:
    v1, v2 = _graphs(DENSE), _graphs(DENSE, v2_runner=True)
    assert v2.bytes - v1.bytes > 512 * MIB


def test_v2s_estimate_from_029_is_its_capture_without_the_driver_reusing_anything() -> None:
    plan = _graphs(DENSE, "0.29.0", v2_runner=True, profiled=True)
    assert plan.estimate_bytes >= plan.bytes + plan.retained_bytes - 32 * MIB


def test_vllms_budget_takes_its_estimate_off_the_kv_pool_and_the_footprint_holds_what_graphs_really_take() -> (
    None
):
    b = _h200(MOE)
    assert b.graph_estimate_in_budget  # V1 on 0.22: subtracted
    # the estimate's own graphs, kept by the driver from inside the profiling window (0.18-0.26), are non-torch
    # growth: charged once there, and not again outside the budget
    profiled = b.graph_profile_in_non_torch
    assert profiled > 0
    assert b.graphs_outside_budget_bytes == b.graphs.resident_bytes - profiled - b.graphs.estimate_bytes
    eager = size_process(replace(b.spec, enforce_eager=True))
    assert b.kv_bytes == eager.kv_bytes - b.graphs.estimate_bytes - profiled


# --- against the H200 runs of vLLM 0.22.0 (bench/gpu/results/2026-12-02-h200-vllm-0.22.0.md). The dense V2
# run informed the V2 side-stream constant, so it is no check; these are.


@pytest.mark.parametrize(
    ("model", "kwargs", "estimate", "captured"),
    [
        (EMBEDDING, {"pooling": True, "max_num_seqs": 64}, 0.13, 0.12),
        (EMBEDDING, {"pooling": True, "max_num_seqs": 16}, 0.06, 0.05),
        (MOE, {"max_num_seqs": 1024}, 0.64, 0.80),
        (FP8, {"max_num_seqs": 1024}, 1.09, 1.24),
    ],
)
def test_colo_lands_near_the_graph_memory_vllm_logged_on_the_h200(
    model: str, kwargs: dict[str, object], estimate: float, captured: float
) -> None:
    b = _h200(model, **kwargs)
    assert b.graphs.estimate_bytes / GIB == pytest.approx(estimate, abs=0.1)
    assert b.graphs.bytes / GIB == pytest.approx(captured, abs=0.1)
