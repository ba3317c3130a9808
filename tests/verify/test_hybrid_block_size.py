"""`colo verify` compares a hybrid model's block size with the one the engine logs, not the API server's label.

vLLM raises a hybrid (attention + Gated DeltaNet or Mamba) model's block size in the engine so that one
attention page holds a state page, and logs it ("Setting attention block size to N tokens"); the
`vllm:cache_config_info` gauge the API server publishes keeps its own copy of the config, whose `block_size`
stays 16 (colo.verify.metrics). A correct plan of a hybrid model must therefore read as within.
"""

from __future__ import annotations

from pathlib import Path

from colo.catalog.data import parse_yaml
from colo.verify.compare import compare
from colo.verify.metrics import CacheConfigInfo, cache_config_info
from colo.verify.startup_log import parse_startup_log
from colo.vllm.process.budget import ProcessBudget
from tests.vllm.helpers import sized

LOGS = Path(__file__).resolve().parents[2] / "bench" / "data" / "vllm_startup_logs.yaml"
# A public 0.27-era log of a Qwen3.x-27B hybrid on an RTX A6000 (bench/data/vllm_startup_logs.yaml, the entry
# whose notes say "Hybrid page: attention block size 1568"): its lines as published.
HYBRID_LINES = next(
    "\n".join(entry["excerpt"])
    for entry in parse_yaml(LOGS.read_text())["entries"]
    if "attention block size 1568" in str(entry.get("notes"))
)
LABEL_16 = CacheConfigInfo(num_gpu_blocks=None, block_size=16)


def _block_term(budget: ProcessBudget, log_text: str, cache: CacheConfigInfo | None) -> tuple[object, object]:
    result = next(
        r for r in compare(budget, parse_startup_log(log_text), cache) if r.term.key == "block_size"
    )
    return result.planned, result.observed


def _hybrid() -> ProcessBudget:
    # fp8 KV at TP1, whose attention block the public log above shows raised to 1568 tokens
    return sized("Qwen/Qwen3.6-27B", "H200", "0.27.1", max_model_len=32768, kv_cache_dtype="fp8")


def test_the_attention_block_size_the_engine_logs_is_parsed_the_last_one_winning() -> None:
    assert parse_startup_log(HYBRID_LINES).attention_block_size == 1568
    twice = (
        HYBRID_LINES
        + "\nINFO [interface.py:925] Setting attention block size to 3136 tokens so the quantized\n"
    )
    assert parse_startup_log(twice).attention_block_size == 3136
    assert parse_startup_log("INFO Model loading took 1.0 GiB memory\n").attention_block_size is None


def test_a_hybrid_plan_is_held_to_the_logged_block_size_not_the_label_of_16() -> None:
    budget = _hybrid()
    planned, observed = _block_term(budget, "Setting attention block size to 1568 tokens\n", LABEL_16)
    assert planned == 1568 and observed == 1568
    planned, observed = _block_term(budget, "Setting attention block size to 784 tokens\n", LABEL_16)
    assert observed == 784 and planned != observed  # a different logged size is still a finding


def test_a_hybrid_plan_with_only_the_api_servers_label_compares_no_block_size() -> None:
    results = compare(_hybrid(), parse_startup_log("INFO Model loading took 1.0 GiB memory\n"), LABEL_16)
    assert "block_size" not in {r.term.key for r in results}


def test_the_engines_effective_block_size_on_metrics_counts_for_a_hybrid_plan() -> None:
    metrics = 'vllm:cache_config_info{block_size="16",effective_attention_block_size="1568",num_gpu_blocks="9"} 1.0\n'
    cache = cache_config_info(metrics)
    assert cache is not None and cache.effective_attention_block_size == 1568
    assert _block_term(_hybrid(), "INFO Model loading took 1.0 GiB memory\n", cache) == (1568, 1568)


def test_a_model_that_is_not_hybrid_still_reads_the_label() -> None:
    budget = sized("Qwen/Qwen3-8B", "H200", "0.27.1", max_model_len=32768)
    assert _block_term(budget, "INFO Model loading took 1.0 GiB memory\n", LABEL_16) == (16, 16)
    wrong = CacheConfigInfo(num_gpu_blocks=None, block_size=32)
    assert _block_term(budget, "INFO Model loading took 1.0 GiB memory\n", wrong) == (16, 32)
