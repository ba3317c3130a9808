"""`colo verify` on logs collected elsewhere: a real log holds, a planted deviation is named, gaps say so."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from colo.cli import main
from colo.verify import readings
from colo.verify.check import COLD_COMPILE
from tests.verify.conftest import REAL_LOG, excerpt


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _real_log_with(
    capsys: pytest.CaptureFixture[str], stack: Path, tmp_path: Path, appended: str
) -> tuple[int, dict[str, Any]]:
    """`colo verify --format json` on the real log with `appended` after it: the exit code, and its one server."""
    log = tmp_path / "chat-llm.log"
    log.write_text(excerpt(REAL_LOG) + appended)
    code, out, _ = _verify(
        capsys, "--config", str(stack), "--log", str(log), "--server", "chat/llm", "--format", "json"
    )
    (server,) = json.loads(out)["servers"]
    return code, server


def test_a_real_log_the_plan_predicted_exits_0_with_every_term_within_tolerance(
    stack: Path, real_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _verify(
        capsys, "--config", str(stack), "--log", str(real_log), "--server", "chat/llm", "--format", "json"
    )
    view = json.loads(out)
    assert code == 0 and view["verdict"] == "within"
    terms = {t["term"]: t for t in view["servers"][0]["terms"]}
    assert {"release", "starts", "weights", "kv_pool", "kv_tokens", "max_concurrency"} <= set(terms)
    assert terms["kv_pool"]["observed"] == 19.28
    assert all(t["ok"] for t in terms.values())


def test_a_kv_pool_ten_percent_smaller_exits_1_and_names_that_term_first(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = tmp_path / "chat-llm.log"
    planted.write_text(
        excerpt(REAL_LOG).replace(
            "Available KV cache memory: 19.28 GiB", "Available KV cache memory: 17.35 GiB"
        )
    )
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(planted), "--server", "chat/llm")
    assert code == 1
    headline = next(line for line in out.splitlines() if line.startswith("chat-llm"))
    assert "PLAN WRONG: Available KV cache memory is off first" in headline
    assert "first off: chat-llm Available KV cache memory" in out.splitlines()[-1]


def test_the_cause_is_named_before_its_consequences(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Heavier weights shrink the pool too; the weights are what was wrong.
    text = (
        excerpt(REAL_LOG)
        .replace("took 14.99 GiB", "took 16.99 GiB")
        .replace("memory: 19.28", "memory: 17.28")
    )
    log = tmp_path / "chat-llm.log"
    log.write_text(text)
    code, out, _ = _verify(
        capsys, "--config", str(stack), "--log", str(log), "--server", "chat/llm", "--format", "json"
    )
    assert code == 1
    assert json.loads(out)["servers"][0]["first_off"] == "weights"


def test_a_server_that_failed_to_start_where_the_plan_said_it_starts_is_named(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = excerpt(REAL_LOG).splitlines()
    kept = lines[: next(i for i, line in enumerate(lines) if "Available KV cache memory" in line) + 1]
    kept.append("(EngineCore_DP0 pid=7) ERROR [core.py:708] EngineCore failed to start.")
    log = tmp_path / "chat-llm.log"
    log.write_text("\n".join(kept))
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(log), "--server", "chat/llm")
    assert code == 1
    assert "startup is off first: planned starts, observed fails" in out
    assert "startup error logged: EngineCore failed to start" in out


def test_a_server_that_started_and_then_failed_while_serving_starts_with_a_note(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, server = _real_log_with(
        capsys,
        stack,
        tmp_path,
        "\n(APIServer pid=1) INFO:     Application startup complete."
        + "\n(EngineCore pid=2) ERROR [core.py:1167] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 MiB.",
    )
    terms = {t["term"]: t for t in server["terms"]}
    assert code == 0 and terms["starts"]["observed"] == "starts" and server["startup_error"] is None
    assert server["notes"] == [
        "started, then failed while serving: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 MiB."
    ]


def test_a_start_that_compiled_on_an_empty_cache_says_its_scratch_is_in_the_figures(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, server = _real_log_with(
        capsys,
        stack,
        tmp_path,
        "\n(EngineCore pid=2) INFO [compilation/backends.py:393] Compiling a graph for compile range (1, 8192) "
        + "takes 31.02 s",
    )
    assert server["notes"] == [COLD_COMPILE]


def test_a_directory_of_logs_reads_every_server_and_says_which_could_not_be_read(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "chat-llm.log").write_text(excerpt(REAL_LOG))
    code, out, _ = _verify(capsys, "--config", str(stack), "--logs", str(logs), "--format", "markdown")
    assert code == 2
    assert "chat-embedding" in out and f"no chat-embedding.log in {logs}" in out
    kv_row = next(line for line in out.splitlines() if line.startswith("| Available KV cache memory (GiB) |"))
    assert kv_row.split(" | ")[2] == "19.28" and kv_row.endswith("| yes |")


def test_metrics_beside_a_log_add_the_cache_config_terms(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "chat-llm.log").write_text(excerpt(REAL_LOG))
    (logs / "chat-llm.metrics").write_text(
        '# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="16",cache_dtype="auto",'
        'engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="9871"} 1.0\n'
    )
    _, out, _ = _verify(capsys, "--config", str(stack), "--logs", str(logs), "--format", "json")
    terms = {t["term"]: t for t in json.loads(out)["servers"][1]["terms"]}
    assert terms["num_gpu_blocks"]["observed"] == 9871 and terms["num_gpu_blocks"]["ok"]
    assert terms["block_size"]["planned"] == 16 and terms["block_size"]["ok"]


def test_a_log_without_startup_lines_exits_2_and_says_so(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "chat-llm.log"
    log.write_text("INFO:     Uvicorn running on http://0.0.0.0:8000\n")
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(log), "--server", "chat/llm")
    assert code == 2
    assert "the log holds none of vLLM's startup lines" in out
    assert out.splitlines()[-1] == "verdict: nothing could be read"


def test_a_log_cut_before_the_kv_cache_was_sized_exits_2_rather_than_confirming_the_weights_alone(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = excerpt(REAL_LOG)
    cut = tmp_path / "chat-llm.log"
    cut.write_text("".join(line for line in text.splitlines(keepends=True) if "Model loading took" in line))
    assert "Model loading took" in cut.read_text()
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(cut), "--server", "chat/llm")
    assert code == 2
    assert "the log ends before vLLM sized the KV cache and holds no startup error" in out


def test_a_server_the_plan_does_not_have_exits_2_naming_the_planned_ones(
    stack: Path, real_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _verify(
        capsys, "--config", str(stack), "--log", str(real_log), "--server", "chat/reranker"
    )
    assert code == 2
    assert "the plan has no server chat/reranker (planned: chat/embedding, chat/llm)" in out


def test_log_without_server_exits_2_plainly(
    stack: Path, real_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _verify(capsys, "--config", str(stack), "--log", str(real_log))
    assert code == 2
    assert "--log needs --server PAIR/ROLE" in err


def test_no_kubeconfig_exits_2_and_says_how_to_go_on(
    stack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    code, out, err = _verify(capsys, "--config", str(stack))
    assert code == 2 and out == ""
    assert err.startswith("colo verify: nothing could be read: no usable kubeconfig")
    assert "--logs DIR" in err


def test_a_log_that_is_no_regular_file_exits_2_without_waiting_on_it(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "chat-llm.log"
    os.mkfifo(fifo)  # reading a named pipe would wait for a writer forever
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(fifo), "--server", "chat/llm")
    assert code == 2
    assert "not a regular file" in out


def test_only_the_head_of_a_long_running_servers_log_is_read(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readings, "LOG_HEAD_BYTES", 64 * 1024)
    log = tmp_path / "chat-llm.log"
    log.write_text(excerpt(REAL_LOG) + "INFO request served\n" * 20_000)  # ~400 KiB of serving after startup
    code, out, _ = _verify(capsys, "--config", str(stack), "--log", str(log), "--server", "chat/llm")
    assert code == 0, out
