"""The figures a vLLM 0.22 startup log prints beyond those `colo verify` compares, read as vLLM words them."""

from __future__ import annotations

from bench.gpu.log_figures import figures, graph_counts

V2_LOG = "\n".join(
    [
        "(EngineCore pid=11) INFO 12-02 10:00:01 [core.py:113] Initializing a V1 LLM engine (v0.22.0) with config: "
        "model='Qwen/Qwen3-32B', compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
        "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4, 8]}",
        "(EngineCore pid=11) INFO 12-02 10:00:02 [gpu_worker.py:289] Using V2 Model Runner",
        "(EngineCore pid=11) INFO 12-02 10:00:02 [platforms/cuda.py:378] Using FLASH_ATTN attention backend out of "
        "potential backends: ['FLASH_ATTN', 'TRITON_ATTN', 'FLEX_ATTENTION'].",
        "(EngineCore pid=11) DEBUG 12-02 10:00:30 [gpu_worker.py:460] Memory profiling takes 4.10 seconds. Total non KV "
        "cache memory: 62.55GiB; torch peak memory increase: 1.33GiB; non-torch forward increase memory: 0.19GiB; "
        "weights memory: 61.03GiB.",
        "(EngineCore pid=11) INFO 12-02 10:00:30 [gpu_worker.py:470] Available KV cache memory: 65.7 GiB",
        "(EngineCore pid=11) DEBUG 12-02 10:00:40 [cudagraph_utils.py:225] CG Capture: mode=FULL, "
        "batch_desc=BatchExecutionDescriptor(cg_mode=<CUDAGraphMode.FULL: 2>, num_tokens=8, num_reqs=8, uniform_token_count=1)",
        "(EngineCore pid=11) DEBUG 12-02 10:00:40 [cudagraph_utils.py:225] CG Capture: mode=FULL, "
        "batch_desc=BatchExecutionDescriptor(cg_mode=<CUDAGraphMode.FULL: 2>, num_tokens=4, num_reqs=4, uniform_token_count=1)",
        "(EngineCore pid=11) DEBUG 12-02 10:00:41 [cudagraph_utils.py:225] CG Capture: mode=PIECEWISE, "
        "batch_desc=BatchExecutionDescriptor(cg_mode=<CUDAGraphMode.PIECEWISE: 1>, num_tokens=8, num_reqs=None, uniform_token_count=None)",
        "(EngineCore pid=11) INFO 12-02 10:00:45 [model_runner.py:662] Graph capturing finished in 5 secs, took 1.87 GiB",
        "(EngineCore pid=11) INFO 12-02 10:00:46 [core.py:303] init engine (profile, create kv cache, warmup model) "
        "took 95.20 s (compilation: 40.10 s)",
    ]
)


def test_a_v2_log_gives_its_runner_profile_and_each_captured_graph() -> None:
    got = figures(V2_LOG)
    assert got["runner"] == "V2" and got["attention_backend"] == "FLASH_ATTN"
    assert (got["profile_activation_gib"], got["profile_non_torch_gib"], got["profile_weights_gib"]) == (
        1.33,
        0.19,
        61.03,
    )
    assert got["graphs_by_mode"] == {"FULL": 2, "PIECEWISE": 1} and got["graphs"] == 3
    assert got["captured_sizes_v2"] == [4, 8]
    assert (got["cudagraph_mode"], got["capture_sizes"]) == ("FULL_AND_PIECEWISE", [1, 2, 4, 8])
    assert (got["graph_captured_gib"], got["graph_estimate_gib"], got["kv_pool_gib"]) == (1.87, None, 65.7)
    assert got["init_engine_s"] == 95.2


def test_a_v1_log_counts_graphs_from_its_progress_bars_and_reads_the_estimate() -> None:
    log = (
        "INFO [gpu_model_runner.py:6366] Estimated CUDA graph memory: 0.64 GiB total\n"
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  50%|█████     | 26/51 [00:01<00:01]\r"
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 51/51 [00:02<00:00]\n"
        "Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:01<00:00]\n"
        "INFO [gpu_worker.py:620] CUDA graph pool memory: 0.8 GiB (actual), 0.64 GiB (estimated), difference: 0.16 GiB (20.0%).\n"
        "DEBUG [gpu_worker.py:720] Free memory on device (132.4/139.8 GiB) on startup. Desired GPU memory utilization is "
        "(0.852, 119.11 GiB). Actual usage is 56.88 GiB for weight, 2.0 GiB for peak activation, 0.2 GiB for non-torch "
        "memory, and 0.8 GiB for CUDAGraph memory. Replace gpu_memory_utilization config"
    )
    got = figures(log)
    assert got["runner"] == "V1"
    assert graph_counts(log) == {"mixed prefill-decode, PIECEWISE": 51, "decode, FULL": 35}
    assert (got["graph_estimate_gib"], got["graph_pool_actual_gib"]) == (0.64, 0.8)
    assert (got["summary_weights_gib"], got["summary_non_torch_gib"], got["summary_graph_gib"]) == (
        56.88,
        0.2,
        0.8,
    )


def test_an_eager_log_captures_nothing() -> None:
    got = figures("INFO Available KV cache memory: 71.0 GiB\n")
    assert got["graphs"] == 0 and got["graphs_by_mode"] == {} and got["graph_captured_gib"] is None
