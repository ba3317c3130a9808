"""A GPU run's servers are sized at the flags their own logs show, beside what vLLM printed."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from bench.gpu.graph_check import check, request_for, server_arguments, servers, table

EMBEDDING_LOG = (
    "(APIServer pid=648) INFO 12-02 02:51:05 [entrypoints/utils.py:278] non-default args: {'model_tag': "
    "'Qwen/Qwen3-Embedding-0.6B', 'model': 'Qwen/Qwen3-Embedding-0.6B', 'runner': 'pooling', 'max_model_len': "
    "8192, 'gpu_memory_utilization': 0.028, 'max_num_batched_tokens': 8192, 'max_num_seqs': 64}\n"
    "INFO Model loading took 1.12 GiB memory and 0.5 seconds\n"
    "INFO Estimated CUDA graph memory: 0.13 GiB total\n"
    "INFO Available KV cache memory: 2.11 GiB\n"
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 19/19 [00:00<00:00]\n"
    "INFO Graph capturing finished in 2 secs, took 0.12 GiB\n"
)


def test_the_servers_own_arguments_are_read_from_its_non_default_args_line() -> None:
    args = server_arguments(EMBEDDING_LOG)
    assert args["runner"] == "pooling" and args["max_num_seqs"] == 64
    request = request_for(EMBEDDING_LOG)
    assert request.pooling and request.gpu_memory_utilization == 0.028 and not request.flashinfer_installed


def test_a_log_without_its_arguments_is_refused() -> None:
    with pytest.raises(ValueError, match="non-default args"):
        server_arguments("INFO Available KV cache memory: 2.11 GiB\n")


def test_each_figure_is_colos_beside_the_logs(tmp_path: Path) -> None:
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in {"logs/dense-embedding.log": EMBEDDING_LOG, "logs/nvidia-smi.txt": "x"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    ((name, text),) = servers([archive])  # the nvidia-smi file is no server's log
    row = check(name, text)
    assert row["server"] == "dense-embedding" and row["runner"] == "V1"
    assert row["graphs"] == {"colo": 19, "log": 19}
    assert row["graph_estimate_gib"]["log"] == 0.13 and row["graph_captured_gib"]["log"] == 0.12
    assert row["kv_pool_gib"]["log"] == 2.11
    assert "| dense-embedding (V1) | 19 / 19 |" in table([row])
