"""The startup-log parser reads real public vLLM logs of every release it claims, as their collectors read them.

Each fixture in startup_logs.yaml carries the figures a person copied from the log by hand (`recorded`); the
parser must find the same figures in the same lines, for every release from 0.10 to 0.31, tensor-parallel
runs, quantized models and failed starts. vLLM 0.34's lines are read from excerpts formatted from the release's
own logger format strings (`formatted: true`): no public 0.34 log was found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from colo.catalog.data import parse_yaml
from colo.verify.startup_log import parse_startup_log

LOGS: list[dict[str, Any]] = parse_yaml((Path(__file__).parent / "startup_logs.yaml").read_text())["logs"]
BY_ID = {entry["id"]: entry for entry in LOGS}


def _text(entry: dict[str, Any]) -> str:
    return "\n".join(entry["excerpt"])


def test_the_fixtures_span_the_releases_and_cases_the_parser_claims() -> None:
    releases = {Version(entry["release"]).release[:2] for entry in LOGS}
    assert len(releases) >= 6
    assert min(releases) <= (0, 10) and max(releases) >= (0, 31)
    covered = {tag for entry in LOGS for tag in entry["covers"]}
    assert {"tp", "quantized", "failed"} <= covered
    assert all(entry["source"] for entry in LOGS)


@pytest.mark.parametrize("entry", LOGS, ids=[entry["id"] for entry in LOGS])
def test_every_figure_the_collector_read_is_parsed_from_the_same_lines(entry: dict[str, Any]) -> None:
    log = parse_startup_log(_text(entry))
    recorded = entry["recorded"]
    summary = log.summary
    parsed = {
        "model_loading_gib": log.weights_gib,
        "available_kv_cache_gib": log.kv_pool_gib,
        "kv_cache_tokens": log.kv_tokens,
        "max_concurrency": log.max_concurrency,
        "cuda_graph_gib": log.graph_gib,
        "cuda_graph_estimate_gib": log.graph_estimate_gib,
        "activation_gib": summary.activation_gib if summary else None,
        "non_torch_gib": summary.non_torch_gib if summary else None,
        "free_at_startup_gib": summary.free_gib if summary else log.error.free_gib if log.error else None,
        "requested_gib": summary.requested_gib if summary else log.error.requested_gib if log.error else None,
        "gpu_total_gib": summary.total_gib if summary else log.error.total_gib if log.error else None,
        "kv_profiled_gib": log.kv_profiled_gib,
        "utilization_cap_gib": log.utilization_cap.cap_gib if log.utilization_cap else None,
        "utilization_withheld_gib": log.utilization_cap.withheld_gib if log.utilization_cap else None,
        "extensible_disabled": log.extensible_disabled,
    }
    measured = log.measured_kv
    if measured is not None:
        parsed |= {
            "free_after_warmup_gib": measured.free_gib,
            "kv_committed_at_warmup_gib": measured.committed_gib,
            "kept_for_transients_gib": measured.kept_gib,
            "kv_blocks": measured.blocks,
            "kv_measured_gib": measured.kv_gib,
            "torch_cap_gib": measured.torch_cap_gib,
            "kv_extended_gib": measured.extended_gib,
            "kv_remapped_from_blocks": measured.remapped_from_blocks,
        }
    for key, value in recorded.items():
        if key == "startup_error":
            continue
        if isinstance(value, str):
            assert parsed[key] == value, key
        else:
            assert parsed[key] == pytest.approx(value), key
    assert log.has_startup_lines
    assert (log.error is not None) == ("startup_error" in recorded)


@pytest.mark.parametrize(
    ("entry_id", "version"),
    [
        ("v1_gptoss120b_h100_v0101_kv_negative", "0.10.1"),  # "vLLM API server version"
        ("b_qwen2_7b_a100_80g_gmu025_v01011", "0.10.1.1"),  # "Initializing a V1 LLM engine (v...)"
        ("c3090_qwen36_27b_int4_4x3090_tp4_v0240", "0.24.0"),
        ("v1_qwen35_35b_a3b_ft_tp4_v0260_summary_line", "0.26.0"),  # the start-up banner
    ],
)
def test_the_release_is_read_from_each_way_vllm_prints_it(entry_id: str, version: str) -> None:
    assert parse_startup_log(_text(BY_ID[entry_id])).vllm_version == version


def test_the_0_34_server_version_line_without_its_logo_names_the_release() -> None:
    assert parse_startup_log(_text(BY_ID["f034_qwen3_8b_h100_measured_kv"])).vllm_version == "0.34.0"


def test_a_0_34_measured_kv_cache_is_the_pool_and_the_profiled_figure_only_its_reservation() -> None:
    log = parse_startup_log(_text(BY_ID["f034_qwen3_8b_h100_measured_kv"]))
    measured = log.measured_kv
    assert measured is not None
    assert (log.kv_pool_gib, log.kv_profiled_gib) == (56.81, 60.47)
    assert (measured.free_gib, measured.committed_gib, measured.kept_gib) == (61.6, 0.07, 2.74)
    assert (measured.peak_gib, measured.torch_growth_gib) == (2.74, 0.31)
    assert (measured.blocks, measured.kv_gib, measured.requested_gib, measured.torch_cap_gib) == (
        6464,
        56.81,
        79.19,
        20.31,
    )
    assert (measured.extended_blocks, measured.extended_gib) == (6464, 56.81)
    # the summary line still prints, before the measured sizing: its "in use" figure is the profiled one
    assert log.summary is not None and log.summary.kv_in_use_gib == 60.47


def test_tensor_parallel_ranks_commit_the_smallest_measured_pool_after_a_remap() -> None:
    log = parse_startup_log(_text(BY_ID["f034_qwen3_32b_tp2_h100_eager_remapped"]))
    measured = log.measured_kv
    assert measured is not None and log.ranks == 2
    assert (measured.blocks, measured.free_gib, measured.remapped_from_blocks) == (5088, 2.8, 5632)
    assert log.kv_pool_gib == 39.75 and log.kv_profiled_gib == 43.02


def test_the_utilization_cap_warning_keeps_what_it_withholds() -> None:
    cap = parse_startup_log(_text(BY_ID["f034_llama31_8b_a100_util09_eager_capped"])).utilization_cap
    assert cap is not None and (cap.utilization, cap.cap_gib, cap.withheld_gib) == (0.9, 71.33, 6.44)


def test_a_server_sized_from_estimates_says_why_the_extensible_cache_was_off() -> None:
    log = parse_startup_log(_text(BY_ID["f034_bge_m3_extensible_disabled"]))
    assert log.extensible_disabled == "the model has no KV cache" and log.measured_kv is None
    imex = "(EngineCore pid=1) INFO 11-20 [config/vllm.py:3256] Extensible KV cache off: without an IMEX channel, KV"
    assert parse_startup_log(imex).extensible_disabled == "without an IMEX channel"


def test_a_compile_on_an_empty_cache_is_told_from_a_load_from_the_cache() -> None:
    # 0.22.0 compilation/backends.py, as the H100 run of 2026-12-07 logged them
    cold = "(EngineCore pid=906) INFO [compilation/backends.py:393] Compiling a graph for compile range (1, 8192) takes 5.34 s"
    warm = (
        "(EngineCore pid=2565) INFO [compilation/backends.py:292] Directly load the compiled graph(s) for compile "
        "range (1, 8192) from the cache, took 1.386 s"
    )
    assert parse_startup_log(cold).compile_cache == "cold"
    assert parse_startup_log(warm).compile_cache == "warm"
    assert parse_startup_log("INFO Model loading took 1.12 GiB memory").compile_cache is None


def test_a_0_34_kv_cache_too_small_after_warm_up_fails_before_its_pool_is_settled() -> None:
    text = "\n".join(
        [
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_planning.py", line 1849, in '
            "shrink_kv_cache_configs",
            "Traceback (most recent call last):",
            "ValueError: To serve at least one request with the model's max seq len (32768), (4.0 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (1.25 GiB). The KV cache gets what is "
            "left after the model, its activations, CUDA graphs and warmup within `gpu_memory_utilization`=0.3",
        ]
    )
    error = parse_startup_log(text).error
    assert error is not None and error.kind == "kv_too_small"
    assert (error.needed_gib, error.available_gib) == (4.0, 1.25)
    assert (error.phase, error.after_kv_cache) == ("sizing the KV cache after warm-up", False)


def test_the_two_summary_formats_split_the_usage_as_their_release_does() -> None:
    old = parse_startup_log(_text(BY_ID["v1_qwen35_35b_a3b_ft_tp4_v0260_summary_line"])).summary
    assert old is not None
    assert (old.weights_gib, old.non_torch_gib, old.consumed_gib) == (16.92, 0.13, None)
    new = parse_startup_log(_text(BY_ID["c3090_qwen38_27b_fp8_2x3090_tp2_v0271_summary"])).summary
    assert new is not None
    assert (new.weights_gib, new.non_torch_gib, new.consumed_gib) == (None, None, 15.25)
    assert (new.free_gib, new.total_gib, new.utilization, new.requested_gib) == (23.15, 23.56, 0.92, 21.67)


def test_the_one_line_capacity_report_of_0_28_and_later_is_read_like_the_two_lines_before() -> None:
    log = parse_startup_log(_text(BY_ID["b_llama31_8b_a100_80g_v0310_default"]))
    assert (log.kv_tokens, log.max_concurrency, log.concurrency_for_tokens) == (460_496, 3.51, 131_072)


def test_a_device_prefix_other_than_gpu_is_read_too() -> None:
    line = "[kv_cache_utils.py:2400] XPU KV cache size: 12,345 tokens, Maximum concurrency for 4,096 tokens per request: 3.01x"
    log = parse_startup_log(line)
    assert (log.kv_tokens, log.max_concurrency) == (12_345, 3.01)


def test_startup_errors_are_told_apart_and_keep_their_figures() -> None:
    free = parse_startup_log(_text(BY_ID["b_fail_free_mem_v0102_4g"])).error
    assert free is not None and free.kind == "free_memory"
    assert (free.free_gib, free.total_gib, free.utilization, free.requested_gib) == (3.22, 4.0, 0.9, 3.6)
    too_small = parse_startup_log(_text(BY_ID["spark_minimax_m27_awq_2xgb10_tp2"])).error
    assert too_small is not None and too_small.kind == "kv_too_small"
    assert (too_small.needed_gib, too_small.available_gib) == (23.25, 22.5)
    negative = parse_startup_log(_text(BY_ID["v1_gptoss120b_h100_v0101_kv_negative"]))
    assert negative.error is not None and negative.error.kind == "engine_failed"
    assert negative.kv_pool_gib == -2.14


# The shape of Qwen3-32B's eager log on one H200 (vLLM 0.22.0, our GPU run of 2026-12-02): it started, then ran
# out of memory under load; only what fails before uvicorn reports the application started is a startup error.
SERVED_THEN_OOM = "\n".join(
    [
        "(EngineCore pid=2163) INFO 12-02 02:56:59 [v1/worker/gpu_worker.py:466] Available KV cache memory: 70.73 GiB",
        "(APIServer pid=2095) INFO:     Application startup complete.",
        "(EngineCore pid=2163) ERROR 12-02 02:58:04 [v1/engine/core.py:1167] torch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 400.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 339.56 MiB is free.",
    ]
)


def test_a_failure_after_the_server_answered_is_no_startup_error_but_is_kept() -> None:
    log = parse_startup_log(SERVED_THEN_OOM)
    assert log.error is None and log.kv_pool_gib == 70.73
    assert log.serving_error is not None and log.serving_error.kind == "out_of_memory"
    assert log.serving_error.text.startswith(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00"
    )


def test_a_failure_before_the_server_answered_is_a_startup_error() -> None:
    startup, serving = SERVED_THEN_OOM.split("\n(APIServer", 1)
    log = parse_startup_log("\n".join([startup, SERVED_THEN_OOM.splitlines()[-1], "(APIServer" + serving]))
    assert log.error is not None and log.error.kind == "out_of_memory"


def test_the_0_14_error_that_names_the_device_and_wraps_across_lines_is_read() -> None:
    text = (
        "ValueError: Free memory on device cuda:0 (14.52/31.36 GiB) on startup is less\n"
        "than desired GPU memory utilization (0.6059, 19.0 GiB)."
    )
    error = parse_startup_log(text).error
    assert error is not None and error.kind == "free_memory"
    assert (error.free_gib, error.utilization, error.requested_gib) == (14.52, 0.6059, 19.0)


def test_tensor_parallel_ranks_keep_the_largest_weights_and_the_smallest_pool() -> None:
    text = "\n".join(
        [
            "(Worker_TP0 pid=1) INFO [gpu_model_runner.py:1] Model loading took 16.90 GiB memory and 9.1 seconds",
            "(Worker_TP1 pid=2) INFO [gpu_model_runner.py:1] Model loading took 16.92 GiB memory and 9.2 seconds",
            "(Worker_TP0 pid=1) INFO [gpu_worker.py:1] Available KV cache memory: 43.41 GiB",
            "(Worker_TP1 pid=2) INFO [gpu_worker.py:1] Available KV cache memory: 43.40 GiB",
        ]
    )
    log = parse_startup_log(text)
    assert (log.weights_gib, log.kv_pool_gib, log.ranks) == (16.92, 43.40, 2)


def test_a_log_without_startup_lines_says_so() -> None:
    log = parse_startup_log(
        "INFO:     Started server process [1]\nINFO:     Waiting for application startup."
    )
    assert not log.has_startup_lines


# vllm-project/vllm#18446 (Qwen3-235B-A22B on the V1 engine): the end of the traceback a worker logs when the
# capture runs out of memory, as the issue quotes it.
CAPTURE_OOM = """\
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470]   File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 186, in __exit__
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470]     self.cuda_graph.capture_end()
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470]   File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 84, in capture_end
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470]     super().capture_end()
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470] RuntimeError: CUDA error: out of memory
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470] CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
(VllmWorker rank=0 pid=233) ERROR 05-21 09:27:46 [multiproc_executor.py:470] Traceback (most recent call last):
"""
# vllm-project/vllm#17462 (Qwen3-32B, TP2 on two L20s, 0.8.5): the KV cache sized, then a worker's exception.
KV_THEN_WORKER_EXCEPTION = """\
INFO 04-30 16:20:37 [kv_cache_utils.py:634] GPU KV cache size: 67,856 tokens
INFO 04-30 16:20:37 [kv_cache_utils.py:637] Maximum concurrency for 16,384 tokens per request: 4.14x
(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380] WorkerProc hit an exception: %s
(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380] Traceback (most recent call last):
(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380]   File "/home/ray/anaconda3/lib/python3.10/site-packages/vllm/v1/executor/multiproc_executor.py", line 375, in worker_busy_loop
(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380]     output = func(*args, **kwargs)
"""


def test_a_capture_that_runs_out_of_memory_is_a_failed_start_after_the_kv_cache() -> None:
    error = parse_startup_log(CAPTURE_OOM).error
    assert error is not None and error.kind == "out_of_memory"
    assert (error.phase, error.after_kv_cache) == ("CUDA graph capture", True)
    assert error.describe() == (
        "failed in CUDA graph capture, after the KV cache was sized: RuntimeError: CUDA error: out of memory"
    )


def test_an_exception_after_the_kv_lines_keeps_the_figures_read_before_it() -> None:
    text = KV_THEN_WORKER_EXCEPTION + (
        '(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380]   File "x.py", line 1, in '
        "capture_model\n(VllmWorker rank=1 pid=12171) ERROR 04-30 16:21:27 [multiproc_executor.py:380] "
        "AssertionError: graph capture failed\n"
    )
    log = parse_startup_log(text)
    assert log.kv_tokens == 67856 and log.max_concurrency == 4.14
    assert log.error is not None and log.error.kind == "exception"
    assert (
        log.error.text == "AssertionError: graph capture failed" and log.error.phase == "CUDA graph capture"
    )


def test_a_traceback_the_server_lived_through_is_no_failed_start() -> None:
    lived = CAPTURE_OOM.replace("RuntimeError: CUDA error: out of memory", "ValueError: a fallback was taken")
    text = lived + "INFO 05-21 09:30:00 [launcher.py:1] Application startup complete.\n"
    assert parse_startup_log(text).error is None
