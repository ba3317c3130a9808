"""The public vLLM 0.19.0 H100 runs with --pipeline-parallel-size or --dtype (tests/hub_files/LOGS.yaml, every
entry cited there) held against colo's estimate with the accuracy bench's tolerances. A check, not a fit: no
constant was set from these logs.

What each figure is, per stage, in 0.19.0: "Model loading took" and "Available KV cache memory" are printed once
per node (logger.info_once, scope "local"), so they are stage 0's; the token count, the concurrency and
num_gpu_blocks are the engine's, from the fewest blocks of any stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.accuracy import arguments
from colo.catalog import GIB
from colo.catalog.data import parse_yaml
from colo.vllm import estimate

LOGS = Path(__file__).resolve().parents[1] / "hub_files" / "LOGS.yaml"
WEIGHTS_TOLERANCE = 0.03  # bench/accuracy.py: weights GiB
UTILIZATION_TOLERANCE = 0.05  # bench/accuracy.py: KV GiB and tokens from utilization alone


def _runs() -> list[dict[str, Any]]:
    entries = parse_yaml(LOGS.read_text())["catalog_model_entries"]
    return [e for e in entries if (e.get("pipeline_parallel_size") or 1) > 1 or e.get("dtype")]


RUNS = _runs()


def _off(colo: float, log: float) -> float:
    return abs(colo - log) / log


def test_the_check_covers_the_pp2_pp4_and_float32_runs() -> None:
    assert {(e["pipeline_parallel_size"], e["dtype"]) for e in RUNS} >= {(2, None), (4, None), (1, "float32")}


@pytest.mark.parametrize("entry", RUNS, ids=[e["id"] for e in RUNS])
def test_a_logged_pp_or_dtype_run_is_estimated_within_the_benchs_tolerances(entry: dict[str, Any]) -> None:
    args = arguments(entry)
    assert args.pipeline_parallel_size == (entry["pipeline_parallel_size"] or 1)
    assert args.dtype == entry["dtype"]
    result = estimate(args.request())
    first = result.stages[0] if result.stages else result.budget
    assert result.arch.dtype == entry["engine_config"]["dtype"]
    assert _off(first.weights_bytes / GIB, entry["model_loading_gib"]) <= WEIGHTS_TOLERANCE
    assert _off(first.kv_bytes / GIB, entry["available_kv_cache_gib"]) <= UTILIZATION_TOLERANCE
    capacity = result.budget.capacity
    assert capacity is not None
    assert _off(capacity.tokens, entry["kv_cache_tokens"]) <= UTILIZATION_TOLERANCE
    assert _off(capacity.max_concurrency, entry["max_concurrency"]) <= UTILIZATION_TOLERANCE
    assert _off(capacity.num_blocks, entry["kv_cache_blocks"]) <= UTILIZATION_TOLERANCE
