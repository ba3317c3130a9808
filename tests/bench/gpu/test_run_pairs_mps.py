"""The GPU runner's MPS arrangement, against a fake `nvidia-cuda-mps-control`, `vllm` and `nvidia-smi`: the daemon
first with its own pipe and log directories, the servers as its clients (or not) with the pod's environment, their
attachment checked after each start, and the daemon told to quit at the end whatever happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.gpu.harness import run_pairs
from tests.bench.gpu.plans import stack_plan
from tests.bench.gpu.test_run_pairs import _free_ports, _records, _spec, gpu
from tests.scripts.fakes import Sandbox

FAKE_CONTROL = Path(__file__).resolve().parent / "fake_mps_control.sh"

__all__ = ["gpu"]  # the fixture, shared with the runner's other tests


@pytest.fixture
def mps_gpu(gpu: Sandbox) -> Sandbox:
    gpu.fake("nvidia-cuda-mps-control", f"source {FAKE_CONTROL}\n")
    return gpu


def _mps_spec(ports: list[int], actions: list[dict[str, Any]], deadline_s: float = 120) -> dict[str, Any]:
    spec = _spec(ports, actions, deadline_s)
    spec["mps"] = True
    servers = spec["servers"]
    servers["p-embedding"]["mps_client"] = True
    servers["p-embedding"]["env"] = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}
    servers["p-llm"]["mps_client"] = True
    servers["ts-llm"] = {**servers["p-llm"], "mps_client": False}
    return spec


def _run(tmp_path: Path, spec: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out, work = tmp_path / "out", tmp_path / "work"
    assert run_pairs.main([str(spec_path), str(out), "--workdir", str(work)]) == 0
    return dict(json.loads((out / "results.json").read_text())), work


def _mps_records(results: dict[str, Any], step: str) -> list[dict[str, Any]]:
    return [r for r in _records(results, "mps") if r["step"] == step]


def _daemon_running(work: Path) -> bool:
    pid_file = work / "mps" / "pipe" / "nvidia-cuda-mps-control.pid"
    if not pid_file.exists():
        return False
    stat = Path(f"/proc/{pid_file.read_text().strip()}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_daemon_starts_first_in_the_runs_own_pipe_directory_and_the_servers_attach_as_clients(
    mps_gpu: Sandbox, tmp_path: Path
) -> None:
    actions = [{"mps": "start"}, {"start": "p-embedding"}, {"start": "p-llm"}, {"mps": "stop"}]
    results, work = _run(tmp_path, _mps_spec(_free_ports(2), actions))
    (start,) = _mps_records(results, "start")
    assert start["outcome"] == "ready" and start["pipe_dir"] == str(work / "mps" / "pipe")
    statuses = _mps_records(results, "status")
    assert [s["label"] for s in statuses] == ["after-start-p-embedding", "after-start-p-llm"]
    assert statuses[-1]["attached"] == {"p-embedding": True, "p-llm": True}
    logs = tmp_path / "out" / "logs"
    assert "MPS client at 25 % threads" in (logs / "p-embedding.log").read_text()
    assert "MPS client at 100 % threads" in (logs / "p-llm.log").read_text()
    assert not _daemon_running(work)


def test_a_server_that_must_not_be_a_client_gets_a_pipe_directory_where_no_daemon_listens(
    mps_gpu: Sandbox, tmp_path: Path
) -> None:
    actions = [{"mps": "start"}, {"start": "ts-llm"}]
    results, _ = _run(tmp_path, _mps_spec(_free_ports(2), actions))
    (status,) = _mps_records(results, "status")
    assert status["attached"] == {"ts-llm": False}
    assert "plain CUDA context" in (tmp_path / "out" / "logs" / "ts-llm.log").read_text()


def test_the_daemon_is_told_to_quit_after_the_servers_even_when_the_actions_do_not_say_so(
    mps_gpu: Sandbox, tmp_path: Path
) -> None:
    actions = [{"mps": "start"}, {"start": "p-embedding"}]
    results, work = _run(tmp_path, _mps_spec(_free_ports(2), actions))
    kinds = [(r["action"], r.get("step") or r.get("server")) for r in results["records"]]
    assert kinds.index(("stop", "p-embedding")) < kinds.index(("mps", "stop"))
    (stop,) = _mps_records(results, "stop")
    assert stop["forced"] is False
    assert not _daemon_running(work)
    assert not list((mps_gpu.root / "gpu-state").iterdir())


def test_a_server_that_fails_still_leaves_no_daemon_behind(mps_gpu: Sandbox, tmp_path: Path) -> None:
    actions = [{"mps": "start"}, {"start": "big-llm"}, {"start": "p-llm"}]
    spec = _mps_spec(_free_ports(2), actions)
    spec["servers"]["big-llm"]["mps_client"] = True
    results, work = _run(tmp_path, spec)
    assert _records(results, "abort") and len(_mps_records(results, "stop")) == 1
    assert not _daemon_running(work)


def test_a_daemon_that_does_not_start_ends_the_run_before_any_client(
    mps_gpu: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MPS_REFUSE", "1")
    results, _ = _run(tmp_path, _mps_spec(_free_ports(2), [{"mps": "start"}, {"start": "p-llm"}]))
    (start,) = _mps_records(results, "start")
    assert start["outcome"] == "failed" and "already running" in start["answer"]
    assert not _records(results, "start")
    assert "MPS control daemon did not start" in _records(results, "abort")[0]["why"]


def test_mps_actions_in_a_spec_without_a_daemon_are_skipped(gpu: Sandbox, tmp_path: Path) -> None:
    results, _ = _run(tmp_path, _spec(_free_ports(2), [{"mps": "start"}]))
    (skip,) = _records(results, "skip")
    assert skip["what"] == "mps start"


def test_companion_throughput_is_reported_per_second(mps_gpu: Sandbox, tmp_path: Path) -> None:
    ports = _free_ports(2)
    clients = [
        {"server": "p-llm", "port": ports[1], "model": "Qwen/Qwen3-32B", "kind": "completions",
         "concurrency": 2, "requests": 4, "prompt_tokens": 16, "max_tokens": 8},
        {"server": "p-embedding", "port": ports[0], "model": "Qwen/Qwen3-Embedding-0.6B",
         "kind": "embeddings", "concurrency": 2, "prompt_tokens": 16},
    ]  # fmt: skip
    actions = [
        {"mps": "start"},
        {"start": "p-embedding"},
        {"start": "p-llm"},
        {"load": {"label": "beside", "duration_s": 15, "clients": clients}},
    ]
    (load,) = _records(_run(tmp_path, _mps_spec(ports, actions))[0], "load")
    embedding = load["clients"][1]
    assert embedding["ok"] > 0
    assert embedding["requests_per_s"] == pytest.approx(embedding["ok"] / embedding["wall_s"], rel=0.05)


@pytest.mark.parametrize(
    "run_file", ["mps.yaml", "mps-h100.yaml", "combined-h100.yaml", "combined-h200.yaml"]
)
def test_the_checked_in_mps_run_goes_through_end_to_end_against_the_fakes(
    mps_gpu: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_file: str
) -> None:
    """A checked-in MPS run as make_spec builds it, on free ports, with the phases shortened (background-only
    phases to a quarter of a second, the LLM's answers to 8 tokens): every start and phase runs, each server attached
    as the run says, and the daemon quits last."""
    import yaml

    from bench.gpu.make_spec import HERE, build_spec

    run = yaml.safe_load((HERE / "runs" / run_file).read_text())
    spec = build_spec(run, {stack: stack_plan(stack) for stack in run["stacks"]})
    ports = dict(zip(spec["servers"], _free_ports(len(spec["servers"])), strict=True))
    for name, server in spec["servers"].items():
        server["port"] = ports[name]
        server["args"][server["args"].index("--port") + 1] = str(ports[name])
    for action in spec["actions"]:
        if "start" in action:
            action["timeout_s"], action["min_s"] = 30, 1
        if "load" in action:
            clients = action["load"]["clients"]
            action["load"]["duration_s"] = 2 if any("requests" in c for c in clients) else 0.25
            for client in clients:
                client["port"] = ports[client["server"]]
                if "max_tokens" in client:
                    client["max_tokens"] = 8
    results, work = _run(tmp_path, spec)
    assert not _records(results, "skip") and not _records(results, "abort")
    started = [r["server"] for r in _records(results, "start")]
    assert started == [a["start"] for a in spec["actions"] if "start" in a]
    last = {}
    for status in _mps_records(results, "status"):
        last.update(status["attached"])
    # planned servers started before the daemon (a combined run's first ones) are no MPS status's business
    assert last == {
        name: server["mps_client"] for name, server in spec["servers"].items() if "mps_client" in server
    }
    loads = _records(results, "load")
    assert len(loads) == sum("load" in a for a in spec["actions"])
    assert all(c["ok"] == c["requests"] > 0 for load in loads for c in load["clients"])
    assert results["records"][-2]["action"] == "mps" and results["records"][-2]["step"] == "stop"
    assert not _daemon_running(work)
