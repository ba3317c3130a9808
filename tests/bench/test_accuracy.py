"""The accuracy bench on three fixed logs: every group computed, informed logs kept out of the headline, and
the naive rule computed as the bench states it."""

from __future__ import annotations

from typing import Any

import pytest

from bench.accuracy import (
    NAIVE_OVERHEAD_GIB,
    Skip,
    arguments,
    coverage,
    informed_ids,
    not_sized,
    run,
    skip_kind,
    split,
    summarize,
    table,
    verdict_counts,
)
from colo.catalog import GIB
from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.weights import parameter_parts


def _log(entry_id: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": entry_id,
        "usable": True,
        "engine": "V1",
        "vllm_version": "0.19.1",
        "gpu": "NVIDIA A100-SXM4-40GB",
        "gpu_total_gib": 39.39,
        "tensor_parallel_size": 1,
        "model": "Qwen/Qwen3-8B",
        "kv_cache_dtype": "auto",
        "max_model_len": 40960,
        "gpu_memory_utilization": 0.9,
        "model_loading_gib": 15.27,
        "available_kv_cache_gib": 19.36,
        "kv_cache_tokens": 140960,
        "max_concurrency": 3.44,
    }
    return {**base, **fields}


SERVED = _log("served")
INFORMING = _log("informing", gpu_memory_utilization=0.85, available_kv_cache_gib=17.4)
# The same process asked for more than the GPU has free: vLLM's startup check refuses it.
REFUSED = _log(
    "refused",
    free_at_startup_gib=20.0,
    requested_gib=35.45,
    model_loading_gib=None,
    available_kv_cache_gib=None,
    kv_cache_tokens=None,
    max_concurrency=None,
    startup_error="ValueError: Free memory on device (20.0/39.39 GiB) on startup is less than desired ...",
)


@pytest.fixture(scope="module")
def results() -> Any:
    return run([SERVED, INFORMING, REFUSED])


def test_every_group_is_computed_for_a_log_that_prints_its_figures(results: Any) -> None:
    headline, _ = split(results, {"informing"})
    assert {c.entry_id for c in headline.comparisons["weights"]} == {"served"}
    assert [c.figure for c in headline.comparisons["kv_pool"]] == ["KV tokens", "max concurrency"]
    assert [c.figure for c in headline.comparisons["kv_util"]] == ["KV GiB", "KV tokens"]
    assert [c.entry_id for c in headline.comparisons["requested"]] == ["refused"]
    assert {(v.entry_id, v.started) for v in headline.verdicts} == {("served", True), ("refused", False)}


def test_a_refused_start_is_predicted_from_the_free_memory_the_log_prints(results: Any) -> None:
    refused = next(v for v in results.verdicts if v.entry_id == "refused")
    assert not refused.colo_started and "Free memory on device" in refused.colo_error
    assert verdict_counts(split(results, {"informing"})[0].verdicts)[1] == 1  # one real failure


def test_a_log_that_informed_a_constant_is_reported_apart_never_in_the_headline(results: Any) -> None:
    headline, flagged = split(results, {"informing"})
    headline_ids = {c.entry_id for group in headline.comparisons.values() for c in group}
    flagged_ids = {c.entry_id for group in flagged.comparisons.values() for c in group}
    assert "informing" not in headline_ids | {v.entry_id for v in headline.verdicts}
    assert flagged_ids == {"informing"}
    weights = summarize(headline.comparisons["weights"], 0.03, lambda c: c.colo)
    assert weights.count == 1  # only the headline log counts
    assert "| startup verdicts (1 real failures) |" in table(headline)[-1]


def test_the_naive_rule_is_util_times_total_minus_params_times_bytes_minus_half_a_gib(results: Any) -> None:
    arch = catalog_architecture("Qwen/Qwen3-8B")
    params = parameter_parts(arch, pooling=False, load_mtp=False).total
    weights_gib = params * arch.dtype_bytes / GIB
    total_gib = round(39.39 * 1024) / 1024  # the log's printed CUDA total, which the bench passes
    kv = next(c for c in results.comparisons["kv_util"] if c.entry_id == "served" and c.figure == "KV GiB")
    assert kv.naive == pytest.approx(0.9 * total_gib - weights_gib - NAIVE_OVERHEAD_GIB)
    weights = next(c for c in results.comparisons["weights"] if c.entry_id == "served")
    assert weights.naive == pytest.approx(weights_gib)
    bytes_per_token = 2 * arch.num_layers * arch.num_kv_heads * arch.head_dim * arch.dtype_bytes
    pool = next(
        c for c in results.comparisons["kv_pool"] if c.entry_id == "served" and c.figure == "KV tokens"
    )
    assert pool.naive == pytest.approx(19.36 * GIB / bytes_per_token)


def test_a_log_colo_cannot_size_is_skipped_with_the_reason() -> None:
    skipped = run(
        [
            _log("v0", engine="V0"),
            _log("elsewhere", model="example/not-in-the-catalog"),
            _log("dev", vllm_version="0.26.1rc1.dev608+g99a10304d"),
            _log("which_a100", gpu="NVIDIA A100", gpu_total_gib=None),
            _log("which_h20", gpu="H20 (as the report names it)", gpu_total_gib=None),
            {**_log("excluded"), "usable": False, "excluded_because": "GPU not named"},
        ]
    ).skipped
    reasons = dict(skipped)
    assert "V0 engine" in reasons["v0"]
    assert "example/not-in-the-catalog" in reasons["elsewhere"]
    assert "not a release" in reasons["dev"]
    assert "A100-40GB" in reasons["which_a100"] and "A100-80GB" in reasons["which_a100"]
    assert "H20-96GB" in reasons["which_h20"] and "H20-141GB" in reasons["which_h20"]  # sold in two sizes
    assert reasons["excluded"] == "not usable: GPU not named"


def test_every_log_not_sized_is_counted_under_the_kind_of_its_reason() -> None:
    skipped = run(
        [
            _log("v0", engine="V0"),
            _log("elsewhere", model="example/not-in-the-catalog"),
            _log("dev", vllm_version="0.26.1rc1.dev608+g99a10304d"),
            _log("which_h20", gpu="H20", gpu_total_gib=None),
            {**_log("excluded"), "usable": False, "excluded_because": "GPU not named"},
        ]
    )
    kinds = [skip_kind(reason) for _, reason in skipped.skipped]
    assert "other" not in kinds and len(set(kinds)) == 5
    assert skip_kind("not usable: a V0 engine, GPU not named") == skip_kind("not usable: anything")
    lines = not_sized(skipped)
    assert len(lines) == 5 and all(line.strip().startswith("1 ") for line in lines)


def test_an_unnamed_gpu_with_a_printed_total_and_capability_is_sized_by_them() -> None:
    entry = _log("unnamed", gpu="unnamed 80 GB-class card", gpu_total_gib=79.33, gpu_compute_capability="9.0")
    args = arguments(entry)
    assert args.gpu is None and args.gpu_memory_mib == round(79.33 * 1024)
    assert args.gpu_compute_capability == "9.0"


def test_an_unnamed_gpu_without_its_capability_is_not_sized() -> None:
    with pytest.raises(Skip, match="compute capability not stated"):
        arguments(_log("unnamed", gpu="unnamed 80 GB-class card", gpu_total_gib=79.33))


def test_the_catalogs_informed_by_lists_are_what_the_bench_keeps_apart() -> None:
    informed = informed_ids()
    assert "c_llama31_8b_a100_32k_v0171" in informed  # colo/vllm/rules.yaml constants
    assert "tokenkaki_a100_40g_qwen3_8b_0191" not in informed  # no longer sets a constant: evidence again
    assert "v1_gemma3_4b_b200_pr21489" in informed  # gpus.yaml


def test_a_failure_that_is_no_memory_verdict_is_left_out_of_the_verdicts() -> None:
    hang = _log(
        "hang",
        available_kv_cache_gib=None,
        kv_cache_tokens=None,
        max_concurrency=None,
        startup_error="hang during torch.compile (no error text)",
    )
    outcome = run([hang])
    assert outcome.verdicts == []
    assert [c.entry_id for c in outcome.comparisons["weights"]] == ["hang"]  # its weights still count


def test_a_named_gpu_keeps_its_catalog_entry_and_takes_the_total_its_log_prints() -> None:
    args = arguments(_log("printed", gpu="NVIDIA A100-SXM4-40GB", gpu_total_gib=39.39))
    assert args.gpu == "A100-40GB" and args.gpu_memory_mib == round(39.39 * 1024)


def test_the_gpu_name_is_read_before_the_remark_beside_it_and_the_gpu_count() -> None:
    stated = "NVIDIA A100 80GB x4 (four single-GPU pods on different nodes, Ray)"
    args = arguments(_log("remark", gpu=stated, gpu_total_gib=None))
    assert args.gpu == "A100-80GB" and args.gpu_memory_mib is None


def test_the_quantization_flag_comes_from_the_logs_own_argument_print() -> None:
    online = _log(
        "online",
        excerpt=["INFO [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-8B', 'quantization': 'fp8'}"],
    )
    namespace = _log("namespace", excerpt=["args: Namespace(model='x', quantization='awq_marlin', seed=0)"])
    assert arguments(online).quantization == "fp8"
    assert arguments(namespace).quantization == "awq_marlin"
    assert arguments(_log("none", excerpt=["Model loading took 15.27 GiB"])).quantization is None


def test_a_log_that_prints_only_its_token_count_is_still_compared_from_utilization() -> None:
    tokens_only = _log("tokens", available_kv_cache_gib=None, max_concurrency=None, model_loading_gib=None)
    figures = [(c.entry_id, c.figure) for c in run([tokens_only]).comparisons["kv_util"]]
    assert figures == [("tokens", "KV tokens")]


def test_a_per_token_head_kv_dtype_is_sized_not_skipped() -> None:
    assert arguments(
        _log("pth", kv_cache_dtype="int8_per_token_head", vllm_version="0.22.0")
    ).kv_cache_dtype == ("int8_per_token_head")


def test_coverage_counts_the_sized_logs_by_tp_size_format_release_and_gpu(results: Any) -> None:
    headline, flagged = split(results, {"informing"})
    lines = coverage(headline)
    assert "  logs sized: 2" in lines  # served and refused; informing is reported apart
    assert "  tensor-parallel sizes: 1 2" in lines
    assert "  releases: 0.19.1 2" in lines
    assert "  GPUs: A100-40GB 2" in lines
    assert "  logs sized: 1" in coverage(flagged)
