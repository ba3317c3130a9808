"""The profile's forward peak: what a compiled model keeps alive beside the layer, and the cuBLAS workspace.

Rules from source (colo/vllm/process/activation.py, docs/vllm-memory-rules.md §11b); the figures at the end are
the H100 run of 2026-12-07 (bench/gpu/results/2026-12-07-h100-*-logs.tar.gz), warm starts only, which set no
constant colo uses.
"""

from __future__ import annotations

from colo.catalog import GIB, MIB
from colo.vllm.process.budget import ProcessBudget, size_process
from tests.vllm.helpers import process, sized

TOKENS = 8192
HIDDEN, INTERMEDIATE, QUERY_WIDTH = 1024, 3072, 16 * 128  # Qwen3-0.6B's geometry (Qwen3-Embedding-0.6B)
HOPPER_WORKSPACE = 32 * MIB  # CublasHandlePool.cpp::parseChosenWorkspaceSize, compute capability 9.0


def _embedder(version: str = "0.22.0", gpu: str = "H100-SXM", **fields: object) -> ProcessBudget:
    return sized(
        "Qwen/Qwen3-Embedding-0.6B",
        gpu,
        version,
        max_model_len=8192,
        max_num_seqs=64,
        max_num_batched_tokens=TOKENS,
        pooling=True,
        **fields,
    )


def test_a_compiled_forward_keeps_the_attention_output_through_the_next_pieces_mlp() -> None:
    budget = _embedder()
    forward = (
        TOKENS * (2 * HIDDEN + 3 * INTERMEDIATE + QUERY_WIDTH) * 2
    )  # residuals, gate_up + act, the output
    assert budget.activation_bytes == forward + HOPPER_WORKSPACE


def test_an_eager_forward_holds_the_down_projections_output_instead() -> None:
    budget = _embedder(enforce_eager=True)
    forward = TOKENS * (3 * HIDDEN + 3 * INTERMEDIATE) * 2
    assert budget.activation_bytes == forward + HOPPER_WORKSPACE


def test_the_profile_keeps_the_cublas_workspace_until_the_release_makes_it_before_its_snapshot() -> None:
    def activation(gpu: str, version: str) -> int:
        spec = process(
            "Qwen/Qwen3-Embedding-0.6B",
            gpu,
            version,
            max_num_seqs=64,
            max_num_batched_tokens=TOKENS,
            pooling=True,
        )
        return size_process(spec).activation_bytes

    before = activation("H100-SXM", "0.32.0")
    assert before - activation("H100-SXM", "0.33.0") == HOPPER_WORKSPACE  # init_device's torch.mm
    assert before - activation("A100-80GB", "0.32.0") == HOPPER_WORKSPACE - (4096 * 2 + 16 * 8) * 1024


def test_the_pooler_pass_stays_below_the_forward() -> None:
    budget = _embedder()
    pooled = TOKENS * HIDDEN * (2 + 4) + 64 * HIDDEN * 2  # hidden states, token_embed's fp32 rows, last rows
    assert budget.activation_bytes > pooled + HOPPER_WORKSPACE


def test_the_warm_h100_starts_log_what_colo_plans() -> None:
    # "torch peak memory increase" of every warm start (emb-mps, emb-mps25, emb-ts twice, emb-mps15: 0.23 GiB;
    # Qwen3-14B on the V2 runner, mps14-llm-mps and mps14-llm-ts: 1.06 GiB), printed to two decimals
    embedder = _embedder().activation_bytes / GIB
    llm = (
        sized(
            "Qwen/Qwen3-14B",
            "H100-SXM",
            "0.22.0",
            max_model_len=8192,
            max_num_seqs=1024,
            max_num_batched_tokens=TOKENS,
        ).activation_bytes
        / GIB
    )
    assert round(embedder, 2) == 0.23
    assert round(llm, 2) == 1.06
