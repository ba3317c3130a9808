"""A server that got less than planned is told apart when a neighbour started before it on the same GPU holds
more than planned: the neighbour and the bytes are named, from each server's own log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colo.catalog import GIB
from colo.cli import main
from colo.verify.compare import compare
from colo.verify.neighbours import (
    Footprint,
    neighbours_took_more,
    observed_footprint,
    planned_footprint,
    planned_free_after_warmup,
)
from colo.verify.startup_log import parse_startup_log
from tests.verify.conftest import EMBEDDER_LOG, REAL_LOG, excerpt
from tests.vllm.helpers import sized


def _gib(value: float) -> int:
    return round(value * GIB)


def _footprint(
    name: str, kv: float | None, weights: float, graphs: float, free: float | None = None
) -> Footprint:
    held = {"kv_pool": None if kv is None else _gib(kv), "weights": _gib(weights), "cuda_graph": _gib(graphs)}
    return Footprint(name, held, None if free is None else _gib(free))  # type: ignore[arg-type]


LLM_PLANNED = _footprint("chat-llm", kv=56.0, weights=15.3, graphs=0.6, free=61.5)
EMBEDDER_PLANNED = _footprint("chat-embedding", kv=2.0, weights=1.1, graphs=0.1)


def test_a_later_server_short_of_free_memory_names_the_earlier_one_that_holds_more_and_by_how_much() -> None:
    embedder = _footprint("chat-embedding", kv=5.0, weights=1.1, graphs=0.1)  # took 3 GiB more KV
    llm = _footprint("chat-llm", kv=53.2, weights=15.3, graphs=0.6, free=58.4)
    (finding,) = neighbours_took_more([(EMBEDDER_PLANNED, embedder), (LLM_PLANNED, llm)])
    assert (finding.server, finding.neighbour, finding.short_of) == (
        "chat-llm",
        "chat-embedding",
        "free_after_warmup",
    )
    assert finding.short_bytes == _gib(61.5) - _gib(58.4)
    assert finding.excess_by_term == (("kv_pool", _gib(3.0)),) and finding.excess_bytes == _gib(3.0)
    assert finding.describe() == (
        "chat-llm got 3.10 GiB less free memory after its warm-up than planned because chat-embedding, started "
        "before it on the same GPU, holds 3.00 GiB more than planned (KV cache +3.00 GiB): vLLM sizes a later "
        "server from what its neighbours leave free"
    )


def test_without_a_planned_free_figure_the_kv_pool_is_what_falls_short() -> None:
    planned = _footprint("chat-llm", kv=56.0, weights=15.3, graphs=0.6)
    observed = _footprint("chat-llm", kv=50.0, weights=15.3, graphs=0.6, free=58.4)
    greedy = _footprint("chat-embedding", kv=2.0, weights=1.1, graphs=1.9)
    (finding,) = neighbours_took_more([(EMBEDDER_PLANNED, greedy), (planned, observed)])
    assert (finding.short_of, finding.short_bytes) == ("kv_pool", _gib(6.0))
    assert finding.excess_by_term == (("cuda_graph", _gib(1.9) - _gib(0.1)),)


def test_no_neighbour_is_blamed_when_it_holds_what_was_planned_within_tolerance() -> None:
    embedder = _footprint("chat-embedding", kv=2.05, weights=1.12, graphs=0.2)
    llm = _footprint("chat-llm", kv=50.0, weights=15.3, graphs=0.6, free=55.0)
    assert neighbours_took_more([(EMBEDDER_PLANNED, embedder), (LLM_PLANNED, llm)]) == []


def test_a_server_that_got_what_was_planned_blames_no_one_and_the_first_server_has_no_neighbour() -> None:
    greedy = _footprint("chat-embedding", kv=5.0, weights=1.1, graphs=0.1)
    as_planned = _footprint("chat-llm", kv=56.0, weights=15.3, graphs=0.6, free=61.4)
    assert neighbours_took_more([(EMBEDDER_PLANNED, greedy), (LLM_PLANNED, as_planned)]) == []
    short_first = _footprint("chat-embedding", kv=0.5, weights=1.1, graphs=0.1)
    assert neighbours_took_more([(EMBEDDER_PLANNED, short_first)]) == []


def test_a_neighbour_whose_log_was_not_read_is_not_blamed() -> None:
    llm = _footprint("chat-llm", kv=50.0, weights=15.3, graphs=0.6, free=55.0)
    assert neighbours_took_more([(EMBEDDER_PLANNED, None), (LLM_PLANNED, llm)]) == []


def test_a_0_34_log_gives_the_free_memory_after_warm_up_and_the_extended_pool() -> None:
    observed = observed_footprint("x", parse_startup_log(excerpt("f034_qwen3_8b_h100_measured_kv")))
    assert observed.free_after_warmup == _gib(61.6)
    assert observed.held == {"kv_pool": _gib(56.81), "weights": _gib(15.27), "cuda_graph": _gib(0.61)}


def test_a_034_plan_states_the_free_memory_it_expects_after_warm_up_and_verify_compares_it() -> None:
    assert (
        planned_free_after_warmup(sized("Qwen/Qwen3-8B", "H100-SXM", "0.33.0")) is None
    )  # sized from the profile
    budget = sized("Qwen/Qwen3-8B", "H100-SXM", "0.34.0", max_model_len=32768, gpu_memory_utilization=0.9)
    assert budget.measured is not None
    expected = budget.measured.free_after_warmup_bytes
    assert planned_free_after_warmup(budget) == expected
    assert planned_footprint("chat-llm", budget).free_after_warmup == expected
    log = parse_startup_log(excerpt("f034_qwen3_8b_h100_measured_kv"))
    terms = {result.term.key: result for result in compare(budget, log, None)}
    assert terms["free_after_warmup"].planned == round(expected / GIB, 2)
    assert terms["free_after_warmup"].observed == 61.6
    assert {"kv_profiled", "kept_for_transients", "kv_pool"} <= set(terms)


def test_verify_logs_names_the_neighbour_that_took_the_memory_a_later_server_was_planned_to_have(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The embedder starts first; its log shows 0.57 GiB of CUDA graphs where the plan gave it 0.14, and the
    LLM started after it got a KV pool 10 % smaller than planned."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "chat-embedding.log").write_text(EMBEDDER_LOG)
    (logs / "chat-llm.log").write_text(
        excerpt(REAL_LOG).replace(
            "Available KV cache memory: 19.28 GiB", "Available KV cache memory: 17.35 GiB"
        )
    )
    assert main(["verify", "--config", str(stack), "--logs", str(logs), "--format", "json"]) == 1
    servers = {server["server"]: server for server in json.loads(capsys.readouterr().out)["servers"]}
    (finding,) = servers["chat-llm"]["neighbour_took_more"]
    assert finding["neighbour"] == "chat-embedding" and finding["short_of"] == "kv_pool"
    assert set(finding["excess_by_term"]) == {"cuda_graph"} and finding["excess_bytes"] > 0.4 * GIB
    assert servers["chat-embedding"]["neighbour_took_more"] == []
    main(["verify", "--config", str(stack), "--logs", str(logs)])
    text = capsys.readouterr().out
    assert "neighbour: chat-llm got " in text and "because chat-embedding, started before it" in text
