"""A stack that plans the process of a real public log, and that log as a server's log file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.catalog.data import parse_yaml

FIXTURES = Path(__file__).parent
LOGS: dict[str, dict[str, Any]] = {
    entry["id"]: entry for entry in parse_yaml((FIXTURES / "startup_logs.yaml").read_text())["logs"]
}
# vLLM 0.15.1 serving Llama-3.1-8B-Instruct eager at util 0.9 on an A100 40GB (https://github.com/ilseokoh/
# vllm-gce, cited in startup_logs.yaml). No catalog constant lists it under `informed_by`, so it is an
# independent check of the plan.
REAL_LOG = "gce_a100_40g_llama31_8b_eager_0151"

# A summary line for the embedder, which starts first on the empty GPU: 38.88 of 39.39 GiB free gives its
# CUDA context (0.51 GiB = 522 MiB). Constructed for this test in the 0.15 wording; not a public log.
EMBEDDER_LOG = (
    "INFO [gpu_model_runner.py:4130] Model loading took 1.06 GiB memory and 2.1 seconds\n"
    "DEBUG [gpu_worker.py:487] Free memory on device (38.88/39.39 GiB) on startup. Desired GPU memory "
    "utilization is (0.051, 2.01 GiB). Actual usage is 1.06 GiB for weight, 0.22 GiB for peak activation, "
    "0.2 GiB for non-torch memory, and 0.57 GiB for CUDAGraph memory.\n"
)

# The embedder's summary line at the utilization and graph memory colo plans for it (bge-m3's PIECEWISE graphs
# on an A100 40GB): this test reads the cluster, it does not check the graph model.
EMBEDDER_AS_PLANNED = EMBEDDER_LOG.replace("(0.051, 2.01 GiB)", "(0.041, 1.62 GiB)").replace(
    "0.57 GiB for CUDAGraph", "0.14 GiB for CUDAGraph"
)


def excerpt(entry_id: str) -> str:
    return "\n".join(LOGS[entry_id]["excerpt"]) + "\n"


def stack_config(**budget: object) -> dict[str, Any]:
    """One pair on the log's GPU and release; the LLM set as the log's run was. The embedder (bge-m3, no KV
    cache) starts first and leaves the LLM the free memory its 0.9 needs, as on the log's idle GPU."""
    return {
        "config": {
            "colo:cluster": {
                "name": "colo-verify",
                "namespace": "colo",
                "gpuPairing": "uuid-handoff",
                # The control plane's context (tests/control_plane); its tests name its API server's port.
                "kubeconfigContext": "colo-test",
                "apiServer": "https://127.0.0.1:6443",
            },
            "colo:nodePool": {
                "mode": "existing",
                "gpu": "A100-40GB",
                "instanceType": "p4d.24xlarge",
                "nodeSelector": {"colo.dev/gpu-pool": "colo"},
            },
            "colo:budget": budget,
            "colo:pairs": [
                {
                    "name": "chat",
                    "llm": {
                        "model": "meta-llama/Llama-3.1-8B-Instruct",
                        "gpuMemoryUtilization": 0.9,
                        "enforceEager": True,
                        "maxNumBatchedTokens": 8192,
                        # vLLM's images install FlashInfer; its 0.15 build files were never published
                        "vllm": {"version": "0.15.1", "build": {"flashinfer": True}},
                    },
                    "embedding": {
                        "model": "BAAI/bge-m3",
                        "vllm": {"version": "0.15.1", "build": {"flashinfer": True}},
                    },
                }
            ],
        }
    }


def write_stack(directory: Path, name: str = "a100", **budget: object) -> Path:
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(stack_config(**budget)))
    return path


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    return write_stack(tmp_path)


@pytest.fixture
def real_log(tmp_path: Path) -> Path:
    path = tmp_path / "chat-llm.log"
    path.write_text(excerpt(REAL_LOG))
    return path
