"""On an NVSwitch board NCCL adds NVLink SHARP buffers to a communicator of more than two Hopper GPUs, as its
source sizes them (read, not measured: multicast cannot run on the machines colo was measured on)."""

from __future__ import annotations

import pytest

from colo.catalog import MIB
from tests.vllm.helpers import sized


def _nvls_bytes(gpu: str, version: str, tp: int) -> int:
    on = sized("Qwen/Qwen3-32B", gpu, version, tensor_parallel_size=tp, nvswitch=True).communication
    off = sized("Qwen/Qwen3-32B", gpu, version, tensor_parallel_size=tp).communication
    return on.in_budget - off.in_budget


@pytest.mark.parametrize(("tp", "mib"), [(2, 0), (4, 16 * 4 * 2), (8, 16 * 8 * 2)])
def test_nvls_buffers_grow_with_the_ranks_from_three_on_hopper(tp: int, mib: int) -> None:
    assert _nvls_bytes("H100-SXM", "0.19.0", tp) == mib * MIB


def test_nccl_2_21_allocated_them_at_init_with_its_alignment() -> None:
    """vLLM 0.8.x loads NCCL 2.21.5: 2 x (1 MiB + 2 MiB) per channel and head."""
    assert _nvls_bytes("H100-SXM", "0.8.5", 4) == 16 * 4 * 6 * MIB


def test_an_ampere_switch_board_has_no_nvls() -> None:
    assert _nvls_bytes("A100-80GB", "0.19.0", 8) == 0


def test_nvls_shrinks_the_kv_pool_by_what_it_holds_in_the_budget() -> None:
    on = sized("Qwen/Qwen3-32B", "H100-SXM", "0.19.0", tensor_parallel_size=4, nvswitch=True)
    off = sized("Qwen/Qwen3-32B", "H100-SXM", "0.19.0", tensor_parallel_size=4)
    assert off.kv_bytes - on.kv_bytes == 128 * MIB
