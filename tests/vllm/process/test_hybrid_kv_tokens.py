"""Hybrid (Gated DeltaNet) models' KV tokens per release: the attention block grown to hold a recurrent state,
the groups, and the pages a request holds per state group, which the server's prefix-caching flag changes."""

from __future__ import annotations

import pytest

from colo.vllm.checkpoint.catalog import catalog_architecture
from colo.vllm.process.kv_cache import kv_capacity, kv_geometry, mamba_state_blocks
from colo.vllm.rules import releases, rules_for

QWEN38_FP8 = "Qwen/Qwen3.8-27B-FP8"
GIB = 1024**3


def test_the_hopper_run_pairs_block_is_784_tokens() -> None:
    """Qwen3.6-27B-FP8 at TP1, bf16 KV (the H100 run): one token of the 16 full-attention layers' page is
    2 x 4 heads x 256 x 2 = 4,096 B; a Gated DeltaNet state 3 x 10,240 x 2 + 48 x 128 x 128 x 4 = 3,207,168 B,
    so vLLM 0.22's _align_hybrid_block_size sets 16 x cdiv(3,207,168, 16 x 4,096) = 784 tokens."""
    geometry = kv_geometry(catalog_architecture("Qwen/Qwen3.6-27B-FP8"), rules=rules_for("0.22.0"))
    assert geometry is not None
    assert geometry.block_tokens == 784 and geometry.group_size == 16 and geometry.num_groups == 4
    assert geometry.bytes_per_block == 16 * 784 * 4096


@pytest.mark.parametrize(
    ("release", "flag", "blocks"),
    [
        ("0.22.0", None, "one_plus_spec"),
        ("0.22.0", True, "two_plus_spec"),
        ("0.25.1", False, "one_plus_spec"),
        ("0.26.0", None, "two_plus_spec"),  # prefix caching on by default for generative hybrids
        ("0.26.0", False, "one_plus_spec"),
        ("0.21.0", True, "one_plus_spec"),  # not re-read: the release's default stands
    ],
)
def test_prefix_caching_picks_the_state_pages_a_request_holds(
    release: str, flag: bool | None, blocks: str
) -> None:
    assert mamba_state_blocks(rules_for(release), flag) == blocks


def test_the_flag_matters_from_the_first_release_read_for_it() -> None:
    firsts = [r.first for r in releases() if r.mamba_align_on_prefix_caching]
    assert firsts[0] == "0.22.0"


def test_a_0_25_log_with_prefix_caching_is_reproduced_to_the_token() -> None:
    """club-3090 issue #998 (bench/data c3090_qwen38_27b_fp8_2x5090_tp2_v0251): Qwen3.8-27B-FP8 on two RTX 5090,
    vLLM 0.25.1, TP2, fp8 KV, 262,144 tokens, MTP with three draft tokens; "Available KV cache memory: 12.52
    GiB", "GPU KV cache size: 705,884 tokens", "2.69x". 482 blocks of 17 x 1,600-token pages; a request holds
    164 attention blocks and, in mode "align", 2 + 3 pages in each of the 3 state groups: 179. Mode "none"
    (1 + 3) would print 717,917 tokens and 2.74x."""
    arch = catalog_architecture(QWEN38_FP8)

    def capacity(prefix_caching: bool) -> tuple[int, float]:
        geometry = kv_geometry(
            arch,
            "fp8",
            num_speculative_tokens=3,
            mtp_draft_layers=1,
            tensor_parallel_size=2,
            rules=rules_for("0.25.1"),
            prefix_caching=prefix_caching,
        )
        assert geometry is not None
        c = kv_capacity(
            geometry,
            int(12.52 * GIB),
            max_model_len=262144,
            max_num_batched_tokens=8192,
            num_speculative_tokens=3,
            tokens_from_concurrency=True,
        )
        return c.tokens, round(c.max_concurrency, 2)

    assert capacity(True) == (705884, 2.69)
    assert capacity(False) == (717917, 2.74)
