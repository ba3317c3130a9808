"""Non-torch memory growth by rule (colo.vllm.process.non_torch): the startup's library state measured per
PyTorch build, and the graph profile's driver memory where the release profiles graphs inside the window."""

from __future__ import annotations

import pytest

from colo.catalog import MIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.cudagraph import GraphSetting, graph_memory
from colo.vllm.process.non_torch import non_torch_growth, torch_minor
from colo.vllm.rules import measured_constants, releases, rules_for

HOPPER = (9, 0)
TORCH_2_11 = "2.11.0+cu130"


def _profiled_graphs(model: str, *, seqs: int, pooling: bool) -> int:
    """The driver memory vLLM 0.22.0's graph profile leaves for `model` at its default capture sizes."""
    top = min(2 * seqs, 512)
    sizes = [s for s in (1, 2, 4, *range(8, min(top + 1, 256), 8), *range(256, top + 1, 16)) if s <= top]
    setting = GraphSetting(seqs, pooling=pooling, compute_capability=HOPPER, profiled=True)
    plan = graph_memory(
        catalog_architecture(model), rules_for("0.22.0"), sizes, setting, measured_constants()
    )
    return plan.profile_executable_bytes


@pytest.mark.parametrize(
    ("release", "torch"), [("0.20.0", TORCH_2_11), ("0.22.0", TORCH_2_11), ("0.26.0", TORCH_2_11)]
)
def test_a_torch_2_11_build_grows_by_the_measured_startup_state(release: str, torch: str) -> None:
    growth = non_torch_growth(rules_for(release), measured_constants(), torch_release=torch)
    assert growth.measured and growth.torch_minor == "2.11"
    assert growth.startup_bytes == 225 * MIB and growth.graph_profile_bytes == 0


def test_a_build_no_measurement_covers_keeps_the_allowance_and_says_so() -> None:
    consts = measured_constants()
    for torch in ("2.10.0+cu129", None):
        growth = non_torch_growth(rules_for("0.19.0"), consts, torch_release=torch)
        assert not growth.measured and growth.startup_bytes == consts.non_torch_growth_mib * MIB
    baseline = non_torch_growth(rules_for("0.33.0"), consts, torch_release="2.14.0+cu130")
    assert baseline.startup_bytes == consts.non_torch_growth_mib_cublas_in_baseline * MIB


def test_the_first_matmuls_share_is_in_the_baseline_where_the_release_makes_the_handles_first() -> None:
    consts = measured_constants()
    rules = rules_for("0.33.0")
    assert rules.cublas_in_baseline
    growth = non_torch_growth(rules, consts, torch_release=TORCH_2_11)
    assert growth.startup_bytes == (225 - consts.cublas_first_use_mib_by_torch["2.11"]) * MIB


def test_the_graph_profile_counts_only_where_it_runs_inside_the_profiling_window() -> None:
    windows = {r.first: r.graph_profile_in_memory_window for r in releases()}
    inside = [first for first, inside in windows.items() if inside]
    assert inside[0] == "0.18.0" and inside[-1] == "0.26.0"
    consts = measured_constants()
    sampled = 8 * MIB
    assert (
        non_torch_growth(
            rules_for("0.22.0"), consts, torch_release=TORCH_2_11, graph_profile_executable_bytes=sampled
        ).graph_profile_bytes
        == sampled
    )
    for release in ("0.17.0", "0.27.0", "0.33.0"):
        growth = non_torch_growth(
            rules_for(release), consts, torch_release=TORCH_2_11, graph_profile_executable_bytes=sampled
        )
        assert growth.graph_profile_bytes == 0


def test_the_h200_v1_servers_grow_by_the_graphs_their_profile_sampled() -> None:
    """vLLM 0.22.0 printed 0.22 GiB without a graph profile (V2 runner, eager), 0.23 for the embedding and
    0.24 for Qwen3-30B-A3B and Qwen3-32B-FP8 (V1, graphs profiled): the profile's sampled graphs' driver
    memory, from the graph model's measured per-graph constants, accounts for the difference."""
    consts = measured_constants()
    rules = rules_for("0.22.0")

    def printed(model: str, seqs: int, pooling: bool) -> float:
        executables = _profiled_graphs(model, seqs=seqs, pooling=pooling)
        growth = non_torch_growth(
            rules, consts, torch_release=TORCH_2_11, graph_profile_executable_bytes=executables
        )
        return round(growth.total_bytes / 1024**3, 2)

    assert printed("Qwen/Qwen3-Embedding-0.6B", 64, True) == 0.23
    assert printed("Qwen/Qwen3-30B-A3B", 1024, False) == 0.24
    assert printed("Qwen/Qwen3-32B-FP8", 1024, False) == 0.24


@pytest.mark.parametrize(
    ("text", "minor"),
    [("2.11.0+cu130", "2.11"), ("2.9.1", "2.9"), ("NVIDIA PyTorch 25.09", None), ("", None)],
)
def test_the_pytorch_minor_is_read_from_the_builds_version(text: str, minor: str | None) -> None:
    assert torch_minor(text) == minor
