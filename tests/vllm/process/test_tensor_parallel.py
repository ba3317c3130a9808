"""One tensor-parallel rank, as vLLM sizes it (docs/vllm-memory-rules.md §10)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from colo.catalog import MIB, GpuSpec, gpu
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.kv_cache import KvGeometry, kv_geometry, kv_heads_per_rank
from colo.vllm.process.tp_comm import TpCommunication, tp_communication
from colo.vllm.rules import TpCommunicationMib, measured_constants, rules_for
from tests.vllm.helpers import sized

COMM = measured_constants().tp_communication_mib.peer_to_peer


def tp2(
    version: str, gpu_spec: GpuSpec, sizes: TpCommunicationMib = COMM, **overrides: Any
) -> TpCommunication:
    """One rank of a TP2 dense model (hidden 4096, 8192 batched tokens, bf16), eager unless told otherwise."""
    settings: dict[str, Any] = {
        "tensor_parallel_size": 2,
        "moe": False,
        "pooling": False,
        "eager": True,
        "hidden": 4096,
        "max_num_batched_tokens": 8192,
        "element": 2,
        **overrides,
    }
    return tp_communication(rules_for(version), sizes, gpu_spec, **settings)


def _per_token(geometry: KvGeometry) -> int:
    """Bytes one token costs on a rank, for a model whose layers all attend fully."""
    return geometry.bytes_per_block // geometry.block_tokens


@pytest.mark.parametrize(
    ("kv_heads", "tp", "per_rank"), [(8, 1, 8), (8, 2, 4), (8, 4, 2), (8, 8, 1), (4, 8, 1), (2, 8, 1)]
)
def test_each_rank_holds_its_share_of_kv_heads_and_at_least_one(
    kv_heads: int, tp: int, per_rank: int
) -> None:
    assert kv_heads_per_rank(kv_heads, tp) == per_rank


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_a_token_costs_one_nth_of_the_bytes_per_rank_so_the_same_pool_holds_n_times_the_tokens(
    tp: int,
) -> None:
    arch = catalog_architecture("meta-llama/Llama-3.1-8B-Instruct")  # 8 KV heads
    one = kv_geometry(arch)
    per_rank = kv_geometry(arch, tensor_parallel_size=tp)
    assert one is not None and per_rank is not None
    assert _per_token(one) == tp * _per_token(per_rank)


def test_kv_heads_are_replicated_when_ranks_outnumber_them() -> None:
    arch = catalog_architecture("Qwen/Qwen3-30B-A3B")  # 4 KV heads
    four = kv_geometry(arch, tensor_parallel_size=4)
    eight = kv_geometry(arch, tensor_parallel_size=8)
    assert four is not None and eight is not None
    assert _per_token(four) == _per_token(eight)


def test_tp_multiplies_reported_tokens_for_the_same_kv_gib() -> None:
    tp1 = sized("Qwen/Qwen3-32B", "H200", "0.20.0", max_model_len=16384, kv_cache_memory_bytes=20 * 2**30)
    tp4 = sized(
        "Qwen/Qwen3-32B",
        "H200",
        "0.20.0",
        max_model_len=16384,
        kv_cache_memory_bytes=20 * 2**30,
        tensor_parallel_size=4,
    )
    assert tp1.capacity is not None and tp4.capacity is not None
    assert tp4.capacity.tokens == pytest.approx(4 * tp1.capacity.tokens, rel=0.001)
    assert tp4.capacity.max_concurrency == pytest.approx(4 * tp1.capacity.max_concurrency, rel=0.01)


def test_a_public_tp8_hybrid_block_size_follows_from_per_rank_pages() -> None:
    # A Gated DeltaNet hybrid at TP8 (github.com/Sandermage/genesis-vllm-patches/issues/24) logs "Setting
    # attention block size to 544 tokens": 2 KV heads of 256 (one per rank, replicated), 16 key and 64 value
    # heads of 128 split over 8 ranks, fp32 SSM state, 3 speculative tokens. With TP1 pages it would be 2128.
    base = catalog_architecture("Qwen/Qwen3.6-35B-A3B")
    assert base.gdn is not None and base.num_kv_heads == 2 and base.head_dim == 256
    arch = replace(base, gdn=replace(base.gdn, num_value_heads=64))
    tp8 = kv_geometry(arch, num_speculative_tokens=3, tensor_parallel_size=8)
    tp1 = kv_geometry(arch, num_speculative_tokens=3)
    assert tp8 is not None and tp1 is not None
    assert next(b for b in tp8.buckets if b.kind == "full").block_tokens == 544
    assert next(b for b in tp1.buckets if b.kind == "full").block_tokens == 2128


def test_the_sampler_peak_is_not_divided_by_the_ranks() -> None:
    tp1 = sized("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM", "0.16.0", max_model_len=16384)
    tp2 = sized(
        "meta-llama/Llama-3.1-8B-Instruct", "H100-SXM", "0.16.0", max_model_len=16384, tensor_parallel_size=2
    )
    # 1024 rows x 128,256 vocabulary x 38 bytes, on every rank
    assert tp2.activation_bytes >= 1024 * 128_256 * 38
    assert tp2.activation_bytes == pytest.approx(tp1.activation_bytes, rel=0.02)


def test_up_to_0102_communicators_land_inside_the_budget_and_from_011_before_the_snapshot() -> None:
    h100 = gpu("H100-SXM")

    def comm(version: str) -> tuple[int, int]:
        c = tp2(version, h100)
        return c.before_snapshot // MIB, c.in_budget // MIB

    before, inside = comm("0.10.2")
    assert before == 0
    # vLLM's communicator + the EP group's (every model until 0.14) + custom all-reduce IPC + torch's group
    assert inside == COMM.first_nccl_communicator + COMM.next_nccl_communicator + 18 + COMM.torch_nccl_group
    before, inside = comm("0.11.0")
    assert before == COMM.first_nccl_communicator + COMM.next_nccl_communicator + 18 + 20 + 64 + 2
    assert inside == COMM.torch_nccl_group
    assert comm("0.10.1.1")[1] > comm("0.10.2")[1]  # NCCL's cuMem allocator off costs more per communicator


def test_dense_models_lose_the_ep_communicator_from_014_and_the_gather_wakes_none_from_026() -> None:
    h100 = gpu("H100-SXM")

    def before_and_inside(version: str, moe: bool) -> tuple[int, int]:
        c = tp2(version, h100, moe=moe)
        return c.before_snapshot, c.in_budget

    assert before_and_inside("0.13.0", False)[0] - before_and_inside("0.14.0", False)[0] == 486 * MIB
    assert before_and_inside("0.14.0", True)[0] == before_and_inside("0.13.0", False)[0]
    assert before_and_inside("0.25.1", False)[1] == 554 * MIB
    assert before_and_inside("0.26.0", False)[1] == 0


def test_flashinfer_allreduce_workspace_counts_from_017_when_compiled_and_from_029_in_eager_mode() -> None:
    h200 = gpu("H200")

    def inside(version: str, eager: bool) -> int:
        return tp2(version, h200, pooling=True, eager=eager, hidden=5120).in_budget

    assert inside("0.16.0", False) == 0
    assert inside("0.17.0", False) == 4 * 2 * 64 * MIB + 2 * MIB  # min(64 MiB, 8192 x 5120 x 2) per buffer
    assert inside("0.28.0", True) == 0
    assert inside("0.29.0", True) == 4 * 2 * 64 * MIB + 2 * MIB


def test_a_tp2_h100_public_log_is_matched_by_rules_not_by_a_fitted_constant() -> None:
    # llm-d capacity-planner run (bench/data llmd_h100_qwen3_32b_tp2_16k, a 0.11.1-0.16 release): per GPU
    # activation 5.64 GiB, non-torch 0.54 GiB, KV 34.49 GiB. The sampler is not halved and torch's group
    # communicator (554 MiB, measured on H200s) is inside.
    budget = sized(
        "Qwen/Qwen3-32B",
        "H100-SXM",
        "0.11.1",
        max_model_len=16000,
        tensor_parallel_size=2,
        gpu_memory_utilization=0.9,
    )
    assert budget.activation_bytes / 2**30 == pytest.approx(5.64, abs=0.1)
    assert budget.kv_bytes / 2**30 == pytest.approx(34.49, rel=0.02)


def test_ranks_without_peer_to_peer_skip_custom_all_reduce_and_stage_nccl_through_host_memory() -> None:
    """vLLM turns custom all-reduce off before allocating its buffers when the ranks lack P2P, and NCCL stages
    through host memory: the measured GPU share of its communicators is far smaller (NCCL_P2P_DISABLE=1 run)."""
    staged = measured_constants().tp_communication_mib.host_staged
    direct = tp2("0.10.1.1", gpu("A100-80GB"))
    hosted = tp2("0.10.1.1", gpu("A100-80GB"), staged)
    assert hosted.in_budget < direct.in_budget / 3
    assert hosted.in_budget // MIB == (
        staged.first_nccl_communicator_cumem_off
        + staged.next_nccl_communicator_cumem_off
        + staged.torch_nccl_group_cumem_off
    )
    assert hosted.unbudgeted == 0  # no custom all-reduce rank_data either


def test_no_peer_to_peer_gives_a_tp_process_the_kv_pool_its_log_shows() -> None:
    """A public TP2 run in one-GPU pods (vLLM 0.10.1.1, A100 80GB, util 0.5) printed 31.83 GiB of KV and the
    P2P warning; charged NVLink-sized communicators, colo would leave it ~2 GiB short."""
    hosted = sized(
        "Qwen/Qwen2-7B-Instruct",
        "A100-80GB",
        "0.10.1.1",
        max_model_len=16384,
        gpu_memory_utilization=0.5,
        tensor_parallel_size=2,
        peer_to_peer=False,
    )
    direct = sized(
        "Qwen/Qwen2-7B-Instruct",
        "A100-80GB",
        "0.10.1.1",
        max_model_len=16384,
        gpu_memory_utilization=0.5,
        tensor_parallel_size=2,
    )
    assert hosted.kv_bytes - direct.kv_bytes > 1.4 * 1024 * MIB


def test_beyond_two_ranks_custom_all_reduce_needs_nvlink_between_every_pair() -> None:
    """`CustomAllreduce.__init__` returns before allocating its buffers for more than two PCIe-only GPUs; two
    PCIe GPUs with peer-to-peer access keep them."""
    h100 = gpu("H100-SXM")
    for tp in (4, 8):
        nvlink = tp2("0.33.0", h100, tensor_parallel_size=tp)
        pcie = tp2("0.33.0", h100, tensor_parallel_size=tp, nvlink=False)
        dropped = (COMM.custom_all_reduce_ipc + COMM.custom_all_reduce_ipc_extra_large_buffer) * MIB
        assert (
            nvlink.before_snapshot - pcie.before_snapshot == dropped + COMM.custom_all_reduce_rank_data * MIB
        )
    assert tp2("0.33.0", h100, nvlink=False) == tp2("0.33.0", h100)
