"""The dummy sampler run's peak by release and runner (docs/vllm-memory-rules.md §11), from the measured
bytes per logit of bench/gpu/results/2026-12-01-h200-sampler-peak.json."""

from __future__ import annotations

import pytest

from colo.catalog import GIB
from colo.vllm.process.activation import SamplerProfile, sampler_profile
from colo.vllm.rules import measured_constants, rules_for
from tests.vllm.helpers import sized

TABLE = measured_constants().sampler_bytes_per_logit


def _profile(
    version: str, rows: int = 256, *, v2: bool = False, spec: bool = False, sms: int = 132
) -> SamplerProfile:
    return sampler_profile(rules_for(version), TABLE, rows=rows, v2_runner=v2, speculative=spec, sm_count=sms)


@pytest.mark.parametrize(
    ("version", "bytes_per_logit", "buffer_rows"),
    [
        ("0.8.5", 10, 0),  # FlashInfer < 0.2.3 samples from probabilities
        ("0.9.0", 14, 0),  # FlashInfer >= 0.2.3 from the logits
        ("0.11.0", 14, 0),
        ("0.11.1", 38, 0),  # FlashInfer opt-in only: PyTorch's sort
        ("0.16.0", 38, 0),
        ("0.17.0", 14, 132),  # Triton, with its per-program buffer: min(pow2(min(132, 256)), 132) rows
        ("0.21.0", 14, 132),
        ("0.30.0", 14, 132),
    ],
)
def test_the_sampler_path_changes_where_the_release_changes_it(
    version: str, bytes_per_logit: int, buffer_rows: int
) -> None:
    profile = _profile(version)
    assert (profile.bytes_per_logit, profile.buffer_rows) == (bytes_per_logit, buffer_rows)


def test_the_triton_buffer_is_capped_by_the_gpus_streaming_multiprocessors() -> None:
    assert _profile("0.20.0", rows=1024, sms=142).buffer_rows == 142
    assert _profile("0.20.0", rows=1024, sms=108).buffer_rows == 108
    assert _profile("0.20.0", rows=100, sms=142).buffer_rows == 128  # next power of two of 100


def test_fewer_than_eight_rows_sort_until_030_and_small_sorts_cost_more_per_logit() -> None:
    assert _profile("0.20.0", rows=4).bytes_per_logit == TABLE.sort_small_batch
    assert _profile("0.29.0", rows=4).bytes_per_logit == TABLE.sort_small_batch  # the native second call
    assert _profile("0.30.0", rows=4).bytes_per_logit == TABLE.triton
    assert _profile("0.16.0", rows=64).bytes_per_logit == TABLE.sort_small_batch
    assert _profile("0.16.0", rows=1).bytes_per_logit == TABLE.sort


@pytest.mark.parametrize(
    ("version", "with_spec"),
    [("0.8.0", 10), ("0.8.1", 12), ("0.9.0", 32), ("0.11.1", 44), ("0.14.0", 50), ("0.17.0", 26)],
)
def test_speculative_decoding_adds_the_rejection_branch_of_the_release(version: str, with_spec: int) -> None:
    assert _profile(version, spec=True).bytes_per_logit == with_spec


def test_the_rejection_branch_runs_one_draft_token_per_request_whatever_k_is() -> None:
    one = sized("Qwen/Qwen3-8B", "H100-SXM", "0.20.0", num_speculative_tokens=1, speculative_method="eagle")
    three = sized("Qwen/Qwen3-8B", "H100-SXM", "0.20.0", num_speculative_tokens=3, speculative_method="eagle")
    assert one.activation_bytes == three.activation_bytes


@pytest.mark.parametrize(
    ("version", "bytes_per_logit"), [("0.22.0", 6), ("0.25.1", 6), ("0.26.0", 2), ("0.33.0", 14)]
)
def test_the_v2_runner_has_its_own_greedy_dummy_sampler(version: str, bytes_per_logit: int) -> None:
    profile = _profile(version, v2=True, spec=True)
    assert (profile.bytes_per_logit, profile.buffer_rows) == (bytes_per_logit, 0)


def test_the_whole_hidden_states_stay_alive_through_the_sampler_from_092() -> None:
    assert not _profile("0.9.1").hidden_states_held
    assert _profile("0.9.2").hidden_states_held


def test_a_dense_7b_on_an_a100_at_low_utilization_gets_the_flashinfer_sampler_under_010() -> None:
    # Issue 15 item 5: official 0.10.x images sample with FlashInfer (14 bytes per logit, not the sort's 38):
    # 256 rows x 152,064 vocabulary x 14 + the [2048, 3584] hidden states + 256 rows of them, and the cuBLAS
    # workspace the profile's first matmul keeps (8 MiB + 128 KiB below compute capability 9).
    budget = sized("Qwen/Qwen2.5-7B-Instruct", "A100-80GB", "0.10.1.1", gpu_memory_utilization=0.5)
    workspace = (4096 * 2 + 16 * 8) * 1024
    assert budget.activation_bytes == 256 * 152_064 * 14 + 2048 * 3584 * 2 + 256 * 3584 * 2 + workspace
    assert budget.activation_bytes < 0.54 * GIB


def test_without_flashinfer_releases_that_would_use_it_sort_instead() -> None:
    profile = sampler_profile(
        rules_for("0.10.1.1"),
        TABLE,
        rows=256,
        v2_runner=False,
        speculative=False,
        sm_count=108,
        flashinfer_installed=False,
    )
    assert profile.bytes_per_logit == TABLE.sort
