"""A run's logs are verified per stack as `colo verify --logs` reads them, and tabled beside the plan."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from bench.gpu.compare_run import compare, markdown
from tests.bench.gpu.plans import stack_plan

EMBEDDING_LOG = """INFO vLLM API server version 0.22.0
INFO Model loading took 1.12 GiB memory and 1.0 seconds
DEBUG Memory profiling takes 1.00 seconds. Total non KV cache memory: 1.5GiB; torch peak memory increase: 0.2GiB; non-torch forward increase memory: 0.18GiB; weights memory: 1.12GiB.
INFO Available KV cache memory: 2.15 GiB
INFO GPU KV cache size: 20,128 tokens
INFO Maximum concurrency for 8,192 tokens per request: 2.46x
Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 19/19 [00:01<00:00]
INFO Graph capturing finished in 2 secs, took 0.13 GiB
"""


def _smi(label: str, used: int, apps: dict[int, int]) -> dict[str, Any]:
    listed = [{"pid": pid, "name": "python3", "used_mib": mib} for pid, mib in apps.items()]
    return {
        "action": "smi",
        "label": label,
        "used_mib": used,
        "free_mib": 143155 - used,
        "smi": {"apps": listed},
    }


def _results(tmp_path: Path, plan: dict[str, Any], logs: dict[str, str]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    spec = {
        "name": "dense",
        "servers": {"dense-embedding": {"stands_for": ["dense-embedding"]}},
        "plans": {"h200-dense": plan},
    }
    records = [
        {"action": "facts", "python": "3.12.3"},
        {"action": "smi", "label": "idle", "used_mib": 0, "free_mib": 143155, "smi": {"apps": []}},
        {"action": "start", "server": "dense-embedding", "outcome": "ready"},
        _smi("after-start-dense-embedding", 4381, {769: 4372}),
        _smi("after-load-x", 4713, {769: 4704}),
    ]
    (run / "results.json").write_text(json.dumps({"spec": spec, "records": records}))
    with tarfile.open(run / "logs.tar.gz", "w:gz") as tar:
        for name, text in logs.items():
            info = tarfile.TarInfo(f"logs/{name}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return run


@pytest.fixture(scope="module")
def dense_plan() -> dict[str, Any]:
    return stack_plan("h200-dense")


def test_every_planned_figure_is_set_beside_what_the_log_printed(
    tmp_path: Path, dense_plan: dict[str, Any]
) -> None:
    run = _results(tmp_path, dense_plan, {"dense-embedding.log": EMBEDDING_LOG})
    report = compare(run, tmp_path / "work")
    stack = report["stacks"]["h200-dense"]
    embedding = stack["servers"]["dense-embedding"]
    rows = {row[0]: row[1:] for row in embedding["rows"]}
    assert rows["weights GiB"][:2] == (1.12, 1.12)
    assert rows["KV pool GiB"][1] == 2.15 and rows["KV tokens"][1] == 20128
    # a pooling model's graphs are PIECEWISE only, one per capture size
    assert rows["CUDA graphs (count)"] == (19, "19 (mixed prefill-decode, PIECEWISE 19)", None)
    assert rows["CUDA graph captured GiB"][:2] == (0.12, 0.13)
    # nvidia-smi lists the engine's pid, not the server's: the process that appeared after its start
    planned = rows["process MiB after start (plan: footprint)"][0]
    assert rows["process MiB after start (plan: footprint)"] == (planned, None, 4372)
    assert rows["process MiB, most under load (plan: footprint)"] == (planned, None, 4704)
    assert stack["servers"]["dense-llm"] == {"not_run": True}
    # the LLM's log is missing, so verify cannot read every server
    assert stack["verify"]["exit_code"] in (1, 2)
    assert "dense-embedding" in markdown(report)


def test_verify_names_the_first_term_off(tmp_path: Path, dense_plan: dict[str, Any]) -> None:
    run = _results(tmp_path, dense_plan, {"dense-embedding.log": EMBEDDING_LOG})
    view = compare(run, tmp_path / "work")["stacks"]["h200-dense"]["verify"]
    (embedding,) = [s for s in view["servers"] if s["server"] == "dense-embedding"]
    # the graphs agree (0.12 planned, 0.13 captured); the log's pool came from a larger utilization
    assert embedding["verdict"] == "plan_wrong" and embedding["first_off"] == "kv_pool"
    terms = {t["term"]: t for t in embedding["terms"]}
    assert terms["cuda_graph"]["ok"] is True and terms["weights"]["ok"] is True
