"""vLLM 0.34's extensible KV cache: the pool sized after warm-up, as `measure_kv_cache_bytes` sizes it.

Each case feeds the quantities a real startup measures (what the process holds after warm-up, the transient
peak, the free memory at its snapshot) and checks the figure vLLM would log, traced through
`vllm 0.34.0 v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes` and `measure_kv_cache_blocks`.
"""

from __future__ import annotations

import pytest

from colo.catalog import GIB, MIB
from colo.vllm.process.budget import geometry_for, size_process
from colo.vllm.rules import rules_for
from tests.vllm.helpers import process, sized

MODEL = "Qwen/Qwen3-8B"


def test_the_utilization_of_a_server_left_unset_resolves_to_the_whole_card() -> None:
    spec = process(MODEL, "H100-SXM", "0.34.0", max_model_len=32768)
    assert spec.utilization == 1.0
    assert size_process(spec).requested_bytes == spec.gpu.cuda_total_bytes


def test_pinning_the_pool_turns_the_measured_sizing_off_and_the_old_default_back_on() -> None:
    spec = process(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, kv_cache_memory_bytes=10 * GIB)
    budget = size_process(spec)
    assert spec.utilization == 0.92
    assert budget.measured is None and budget.sizing == "pinned"
    assert budget.kv_bytes == 10 * GIB


def test_releases_before_034_size_the_pool_from_the_profile() -> None:
    budget = sized(MODEL, "H100-SXM", "0.33.0", max_model_len=32768, gpu_memory_utilization=0.5)
    assert budget.measured is None and budget.sizing == "profiled"


def test_a_lone_server_gets_its_request_less_what_it_holds_after_warm_up_less_its_transient() -> None:
    budget = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    m = budget.measured
    assert m is not None and m.bound == "requested"
    available = budget.requested_bytes - m.non_kv_bytes - m.transient_bytes
    assert m.available_bytes == available
    geometry = geometry_for(budget.spec)
    assert geometry is not None
    # whole blocks, and at most one granule lost per layer segment to page rounding
    assert budget.kv_bytes % geometry.bytes_per_block == 0
    assert available - budget.kv_bytes < geometry.group_size * 2 * MIB + geometry.bytes_per_block
    assert m.physical_bytes <= available


def test_what_the_process_holds_after_warm_up_counts_the_captured_graphs_not_an_estimate() -> None:
    budget = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    m = budget.measured
    assert m is not None
    assert budget.graphs.resident_bytes > 0
    assert m.non_kv_bytes == budget.weights_bytes + budget.non_torch_bytes + budget.graphs.resident_bytes
    assert (
        not budget.graph_estimate_in_budget
    )  # profile_cudagraph_memory returns 0 under the extensible cache


def test_eager_mode_gives_the_graphs_memory_to_the_pool() -> None:
    captured = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    eager = sized(
        MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5, enforce_eager=True
    )
    gained = eager.kv_bytes - captured.kv_bytes
    geometry = geometry_for(captured.spec)
    assert geometry is not None
    assert (
        abs(gained - captured.graphs.resident_bytes)
        <= 2 * geometry.bytes_per_block + geometry.group_size * 2 * MIB
    )


def test_the_margin_is_a_gib_or_three_quarters_of_the_transient_whichever_is_larger() -> None:
    small = sized("Qwen/Qwen3-Embedding-0.6B", "H100-SXM", "0.34.0", pooling=True, gpu_memory_utilization=0.1)
    large = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    assert small.measured is not None and large.measured is not None
    assert small.measured.transient_bytes < 1 * GIB / 0.75
    assert small.measured.margin_bytes == 1 * GIB
    assert large.measured.transient_bytes > 1 * GIB / 0.75
    assert large.measured.margin_bytes == int(large.measured.transient_bytes * 0.75)


def test_a_request_beyond_what_the_server_finds_free_is_not_refused_but_sized_from_the_free_memory() -> None:
    spec = process(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.9)
    others = 30 * GIB
    budget = size_process(spec, free_before_bytes=spec.gpu.cuda_total_bytes - others)
    m = budget.measured
    assert m is not None
    assert budget.startup.ok  # request_memory no longer refuses free < requested
    assert m.bound == "free"
    assert m.available_bytes == m.free_seen_bytes - m.non_kv_bytes - m.margin_bytes - m.transient_bytes
    # the same request, started alone, gets the room its request gives: what the neighbours hold, less the
    # margin the request side does not need, is what the pool lost
    alone = size_process(spec)
    assert alone.measured is not None and alone.measured.bound == "requested"
    lost = alone.measured.available_bytes - m.available_bytes
    assert lost == budget.requested_bytes - (m.free_seen_bytes - m.margin_bytes)
    assert alone.kv_bytes > budget.kv_bytes


def test_033_refuses_the_same_over_committed_start() -> None:
    spec = process(MODEL, "H100-SXM", "0.33.0", max_model_len=32768, gpu_memory_utilization=0.9)
    budget = size_process(spec, free_before_bytes=spec.gpu.cuda_total_bytes - 30 * GIB)
    assert not budget.startup.ok
    assert "Free memory on device cuda:0" in budget.startup.message


def test_a_pool_that_cannot_hold_one_request_after_warm_up_is_refused_in_vllms_words() -> None:
    budget = sized(MODEL, "L40S", "0.34.0", max_model_len=40960, gpu_memory_utilization=0.38)
    assert budget.errors, "weights 15 GiB of a 16.9 GiB request leave less than one 40,960-token request"
    assert "To serve at least one request with the model's max seq len (40960)" in budget.errors[0]
    assert "The KV cache gets what is left after" in budget.errors[0]
    assert "`gpu_memory_utilization`=0.38" in budget.errors[0]


def test_the_block_size_is_64_tokens_from_034_and_16_before() -> None:
    for version, tokens in (("0.33.0", 16), ("0.34.0", 64)):
        geometry = geometry_for(process(MODEL, "H100-SXM", version, max_model_len=32768))
        assert geometry is not None and geometry.block_tokens == tokens


def test_the_committed_pool_is_never_larger_than_the_reserved_range() -> None:
    budget = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    assert budget.measured is not None
    assert budget.kv_bytes <= budget.measured.reserved_bytes


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_a_model_without_kv_cache_layers_skips_the_sizing(version: str) -> None:
    budget = sized("BAAI/bge-m3", "H100-SXM", version, pooling=True, gpu_memory_utilization=0.1)
    assert budget.capacity is None and budget.measured is None


def test_the_footprint_of_a_server_sized_from_its_request_stays_within_the_request() -> None:
    budget = sized(MODEL, "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.5)
    ceiling = budget.context_bytes + budget.requested_bytes + budget.post_profile_bytes
    assert budget.footprint_bytes <= ceiling


def test_rules_of_034_come_from_the_release_source() -> None:
    rules = rules_for("0.34.0").measured_kv_sizing
    assert rules is not None
    assert (rules.margin_floor_mib, rules.margin_fraction, rules.torch_cap_reserve_mib) == (1024, 0.75, 512)
    assert rules.default_gpu_memory_utilization == 1.0
    assert rules.granule_mib == 2


def test_a_server_left_unset_never_holds_more_than_torchs_cap_leaves() -> None:
    # utilization 1.0: the pool comes from the free side, and torch's allocator is capped to leave 512 MiB of what
    # the process found free, so even the serving growth colo allows for cannot take the card
    budget = sized(MODEL, "L40S", "0.34.0", max_model_len=32768)
    assert budget.measured is not None and budget.measured.bound == "free"
    assert budget.footprint_bytes == budget.spec.gpu.cuda_total_bytes - 512 * MIB
