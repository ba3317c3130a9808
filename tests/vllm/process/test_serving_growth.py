"""What a server grows by once it serves, beyond its budget, is held back from the LLM's utilization: measured
on a real H200 (rules.yaml v2_serving_growth_mib), for V2-runner generate servers only."""

from __future__ import annotations

import re

from colo.catalog import MIB
from colo.vllm import measured_constants
from tests.paths import REPO_ROOT
from tests.vllm.helpers import process, sized

MIB_GROWTH = measured_constants().v2_serving_growth_mib


def test_a_v2_runner_llm_holds_its_measured_growth_beyond_the_budget() -> None:
    spec = process("Qwen/Qwen3-32B", "H200", "0.22.0")
    assert spec.v2_model_runner
    budget = sized("Qwen/Qwen3-32B", "H200", "0.22.0")
    assert budget.post_profile_bytes == (measured_constants().post_profile_mib + MIB_GROWTH) * MIB
    assert budget.footprint_bytes >= budget.requested_bytes + MIB_GROWTH * MIB


def test_a_v1_runner_llm_and_a_pooling_server_do_not() -> None:
    v1 = sized("Qwen/Qwen3-30B-A3B", "H200", "0.22.0")
    assert not v1.spec.v2_model_runner
    assert v1.post_profile_bytes == measured_constants().post_profile_mib * MIB
    embedder = sized("Qwen/Qwen3-Embedding-0.6B", "H200", "0.22.0", pooling=True)
    assert embedder.post_profile_bytes == measured_constants().post_profile_mib * MIB


def test_the_growth_is_the_most_the_recorded_h200_run_grew_beyond_its_budget() -> None:
    """The results' table: requested + context (+ graphs outside) MiB, then the most nvidia-smi showed under load."""
    table = (REPO_ROOT / "bench" / "gpu" / "results" / "2026-12-02-h200-vllm-0.22.0.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| dense-llm (V2) |"))
    budget, _, under_load = (cell.strip() for cell in row.strip("|").split("|")[1:4])
    most = int(re.match(r"[\d,]+", under_load).group(0).replace(",", ""))  # type: ignore[union-attr]
    assert most - int(budget.replace(",", "")) == MIB_GROWTH
