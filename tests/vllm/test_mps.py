"""A vLLM process as a CUDA MPS client: figures from measurements only, interpolated inside them, never outside."""

from __future__ import annotations

import pytest

from colo.catalog import MIB, gpu
from colo.catalog.mps import MpsFigures, load_mps_catalog
from colo.vllm import gpu_as_client, mps_client, unmeasured_reason
from colo.vllm.mps import at_percentage

# Invented figures, for the arithmetic alone: no GPU's measurement.
FIGURES = MpsFigures(
    gpu="H200",
    server_bytes=66 * MIB,
    client_context_bytes={25: 290 * MIB, 50: 420 * MIB, 100: 621 * MIB},
    client_cublas_bytes={25: 80 * MIB, 100: 118 * MIB},
    client_sm_count={25: 33, 100: 132},
)


def test_a_measured_percentage_is_read_as_measured() -> None:
    client = mps_client(FIGURES, 50, first=False)
    assert (client.context_bytes, client.interpolated) == (420 * MIB, True)  # cuBLAS at 50 % is interpolated
    assert client.cublas_bytes == int(80 * MIB + (25 / 75) * (118 - 80) * MIB)
    assert client.sm_count == int(33 + (25 / 75) * (132 - 33))  # whole SMs, rounded down


def test_a_percentage_between_two_measured_ones_is_interpolated_linearly() -> None:
    assert at_percentage({25: 290, 100: 621}, 40) == (int(290 + (15 / 75) * 331), True)


def test_no_figure_is_stated_outside_the_measured_percentages() -> None:
    assert at_percentage({25: 290, 100: 621}, 10) is None
    reason = unmeasured_reason(FIGURES, "H200", 10)
    assert reason is not None and "outside what was measured on H200 (25 %, 50 %, 100 %)" in reason


def test_an_uncapped_client_takes_the_full_gpu_figures() -> None:
    client = mps_client(FIGURES, None, first=False)
    assert (client.percentage, client.context_bytes, client.cublas_bytes) == (100, 621 * MIB, 118 * MIB)


def test_the_first_client_also_holds_the_mps_server_which_starts_as_it_connects() -> None:
    first, later = mps_client(FIGURES, 25, first=True), mps_client(FIGURES, 25, first=False)
    assert first.server_bytes == 66 * MIB and later.server_bytes == 0
    h200 = gpu("H200")
    seen = gpu_as_client(h200, first)
    assert seen.context_bytes == 290 * MIB + 66 * MIB
    assert seen.cublas_bytes == 80 * MIB
    assert seen.sm_count == 33  # what CUDA reports to a client capped at 25 %
    assert seen.cuda_total_bytes == h200.cuda_total_bytes  # vLLM's total x util is unchanged


def test_a_gpu_without_measured_figures_is_refused_with_the_script_that_measures_them() -> None:
    unmeasured = MpsFigures(gpu="L40S", server_bytes=None)
    for figures in (None, unmeasured):
        reason = unmeasured_reason(figures, "L40S", 100)
        assert reason is not None and "bench/gpu/measure_mps.py" in reason
    with pytest.raises(ValueError, match="no measured CUDA MPS figures"):
        mps_client(unmeasured, None, first=True)


def test_the_shipped_catalog_states_no_figure_it_has_not_measured() -> None:
    """Until bench/gpu/measure_mps.py has run, every entry is 'to be measured' and says so."""
    for name, figures in load_mps_catalog().items():
        assert gpu(name).name == name  # entries are catalog GPU names
        if not figures.measured:
            assert figures.source.startswith("to be measured")
        else:
            assert "measure_mps.py" in figures.source and figures.source != ""
