"""The GPU runner, run here against a fake `vllm` and a fake `nvidia-smi` first on PATH.

It must start the planned servers in order with the plan's own arguments (plus only `--load-format dummy`),
wait for each /health, record a log and an nvidia-smi reading after each start, run bounded loads, record a
refusal as a refusal, and leave nothing running that it started.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.gpu.harness import run_pairs
from bench.gpu.harness.cpus import cores, format_cpus, parse_cpus, pin, resolve
from tests.scripts.fakes import Sandbox

FAKE_VLLM = Path(__file__).resolve().parent / "fake_vllm.py"
NVIDIA_SMI = """
state="$FAKE_GPU_STATE"
used=0; for f in "$state"/*; do [[ -f $f ]] && used=$((used + $(cat "$f"))); done
total=143771
case "$*" in
  *query-gpu=index*) echo "0, NVIDIA H200, 580.159.04, $total, $used, $((total - used))" ;;
  *query-gpu=memory.used*) echo "$used, $((total - used))" ;;
  *query-compute-apps*) for f in "$state"/*; do [[ -f $f ]] && echo "$(basename "$f"), python3, $(cat "$f")"; done ;;
  "-i 0") echo "| NVIDIA H200 | ${used}MiB / ${total}MiB |" ;;
  *) echo "unexpected: $*" >&2; exit 9 ;;
esac
exit 0
"""


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _server(model: str, port: int, util: str, *extra: str) -> dict[str, Any]:
    args = [
        model,
        "--served-model-name",
        model,
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--gpu-memory-utilization",
        util,
        *extra,
    ]
    return {"port": port, "args": args, "stands_for": []}


@pytest.fixture
def gpu(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    state = sandbox.root / "gpu-state"
    state.mkdir()
    sandbox.fake("nvidia-smi", NVIDIA_SMI)
    sandbox.fake("vllm", f'exec {sys.executable} {FAKE_VLLM} "$@"\n')
    monkeypatch.setenv("PATH", f"{sandbox.bin}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_STATE", str(state))
    monkeypatch.setenv("FAKE_VLLM_MIB", "4000")
    monkeypatch.setenv("FAKE_VLLM_FREE_FRACTION", "0.95")
    # tokenizer.json comes from the `tokenizers` library on the GPU machine; here a file in its place, and no
    # vocabulary (150,000 words a model) is made for it
    monkeypatch.setattr(
        "bench.gpu.harness.model_dirs.write_tokenizer_json", lambda path, *_: path.write_text("{}")
    )
    monkeypatch.setattr("bench.gpu.harness.model_dirs.vocabulary", lambda config: {})
    # A real server takes a minute to start and is asked for /health each second; the fake is up at once.
    monkeypatch.setattr(run_pairs, "wait_ready", functools.partial(run_pairs.wait_ready, poll_s=0.05))
    return sandbox


def _spec(ports: list[int], actions: list[dict[str, Any]], deadline_s: float = 120) -> dict[str, Any]:
    tiny = {
        "architectures": ["Qwen3ForCausalLM"],
        "num_hidden_layers": 2,
        "vocab_size": 151936,
        "max_position_embeddings": 4096,
        "hidden_size": 64,
    }
    return {
        "name": "test",
        "deadline_s": deadline_s,
        "env": {"VLLM_USE_FLASHINFER_SAMPLER": "0"},
        "extra_args": ["--load-format", "dummy"],
        "models": {"Qwen/Qwen3-Embedding-0.6B": tiny, "Qwen/Qwen3-32B": tiny},
        "servers": {
            "p-embedding": _server("Qwen/Qwen3-Embedding-0.6B", ports[0], "0.028", "--runner", "pooling"),
            "p-llm": _server("Qwen/Qwen3-32B", ports[1], "0.917", "--max-model-len", "32768"),
            "big-llm": _server("Qwen/Qwen3-32B", ports[1], "0.97"),
        },
        "actions": actions,
        "plans": {},
    }


def _run(tmp_path: Path, spec: dict[str, Any]) -> dict[str, Any]:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out = tmp_path / "out"
    assert run_pairs.main([str(spec_path), str(out), "--workdir", str(tmp_path / "work")]) == 0
    return dict(json.loads((out / "results.json").read_text()))


def _records(results: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [r for r in results["records"] if r["action"] == action]


def test_servers_start_in_order_with_the_plans_arguments_and_only_dummy_loading_added(
    gpu: Sandbox, tmp_path: Path
) -> None:
    ports = _free_ports(2)
    results = _run(tmp_path, _spec(ports, [{"start": "p-embedding"}, {"start": "p-llm"}]))
    starts = _records(results, "start")
    assert [(s["server"], s["outcome"]) for s in starts] == [("p-embedding", "ready"), ("p-llm", "ready")]
    plan_args = _spec(ports, [])["servers"]["p-llm"]["args"]
    assert starts[1]["command"][1:] == ["serve", *plan_args, "--load-format", "dummy"]
    logs = tmp_path / "out" / "logs"
    assert "Available KV cache memory" in (logs / "p-llm.log").read_text()
    assert "num_gpu_blocks" in (logs / "p-embedding.metrics").read_text()


def test_nvidia_smi_is_read_after_each_start_and_nothing_started_is_left_running(
    gpu: Sandbox, tmp_path: Path
) -> None:
    results = _run(tmp_path, _spec(_free_ports(2), [{"start": "p-embedding"}, {"start": "p-llm"}]))
    used = {r["label"]: r["used_mib"] for r in _records(results, "smi")}
    assert used["idle"] == 0
    assert used["after-start-p-embedding"] == 4000 and used["after-start-p-llm"] == 8000
    assert used["end"] == 0  # both servers, and only they, were stopped
    assert not list((gpu.root / "gpu-state").iterdir())


def test_a_start_vllm_refuses_is_recorded_as_an_exit_with_its_log(gpu: Sandbox, tmp_path: Path) -> None:
    results = _run(
        tmp_path, _spec(_free_ports(2), [{"start": "p-embedding"}, {"start": "big-llm", "expect": "refused"}])
    )
    refused = _records(results, "start")[1]
    assert (refused["outcome"], refused["exit_code"], refused["expect"]) == ("exited", 1, "refused")
    assert (
        "less than desired GPU memory utilization (0.97"
        in (tmp_path / "out" / "logs" / "big-llm.log").read_text()
    )


def test_a_load_measures_first_tokens_and_decode_and_samples_the_gpu(gpu: Sandbox, tmp_path: Path) -> None:
    ports = _free_ports(2)
    clients = [
        {
            "server": "p-llm",
            "port": ports[1],
            "model": "Qwen/Qwen3-32B",
            "kind": "completions",
            "concurrency": 4,
            "requests": 8,
            "prompt_tokens": 32,
            "max_tokens": 16,
        },
        {
            "server": "p-embedding",
            "port": ports[0],
            "model": "Qwen/Qwen3-Embedding-0.6B",
            "kind": "embeddings",
            "concurrency": 2,
            "prompt_tokens": 64,
        },
    ]
    actions = [
        {"start": "p-embedding"},
        {"start": "p-llm"},
        {"load": {"label": "both", "duration_s": 20, "clients": clients}},
    ]
    (load,) = _records(_run(tmp_path, _spec(ports, actions)), "load")
    llm, embedding = load["clients"]
    assert (llm["ok"], llm["requests"], llm["output_tokens"]) == (8, 8, 128)
    assert llm["ttft_p50_s"] is not None and llm["tpot_p50_s"] is not None
    assert embedding["ok"] == embedding["requests"] > 0  # background load until the counted client is done
    assert load["phase"]["samples"] > 0 and load["min_free_mib"] == 143771 - 8000


def test_an_action_that_no_longer_fits_the_deadline_is_skipped_and_said_so(
    gpu: Sandbox, tmp_path: Path
) -> None:
    spec = _spec(_free_ports(2), [{"start": "p-embedding", "min_s": 60}], deadline_s=50)
    (skip,) = _records(_run(tmp_path, spec), "skip")
    assert skip["what"] == "start p-embedding" and "deadline" in skip["why"]


def test_the_logs_travel_back_in_one_archive(gpu: Sandbox, tmp_path: Path) -> None:
    _run(tmp_path, _spec(_free_ports(2), [{"start": "p-embedding"}]))
    with tarfile.open(tmp_path / "out" / "logs.tar.gz") as tar:
        names = tar.getnames()
    assert "logs/p-embedding.log" in names and any(n.startswith("logs/nvidia-smi-") for n in names)


def test_a_server_that_should_start_but_does_not_ends_the_run_without_the_actions_after_it(
    gpu: Sandbox, tmp_path: Path
) -> None:
    actions = [{"start": "big-llm"}, {"start": "p-embedding"}]
    results = _run(tmp_path, _spec(_free_ports(2), actions))
    assert [s["server"] for s in _records(results, "start")] == ["big-llm"]
    (abort,) = _records(results, "abort")
    assert "big-llm did not start" in abort["why"]


def test_a_probed_server_runs_with_the_startup_probe_and_its_own_extra_arguments_last(
    gpu: Sandbox, tmp_path: Path
) -> None:
    spec = _spec(_free_ports(2), [{"start": "p-llm"}, {"start": "p-embedding"}])
    spec["servers"]["p-llm"] |= {"probe": True, "extra_args": ["--gdn-prefill-backend", "triton"]}
    starts = _records(_run(tmp_path, spec), "start")
    assert starts[0]["command"][-4:] == ["--load-format", "dummy", "--gdn-prefill-backend", "triton"]
    logs = tmp_path / "out" / "logs"
    assert "fake vllm: probe installed" in (logs / "p-llm.log").read_text()
    assert "fake vllm: probe absent" in (logs / "p-embedding.log").read_text()


def test_a_server_started_again_under_another_name_keeps_both_logs(gpu: Sandbox, tmp_path: Path) -> None:
    actions = [
        {"start": "p-embedding"},
        {"start": "p-embedding", "as": "p-embedding-again"},  # still running: skipped, said so
        {"stop": "p-embedding"},
        {"start": "p-embedding", "as": "p-embedding-warm"},
    ]
    results = _run(tmp_path, _spec(_free_ports(2), actions))
    assert [(s["server"], s["log"]) for s in _records(results, "start")] == [
        ("p-embedding", "p-embedding"),
        ("p-embedding", "p-embedding-warm"),
    ]
    (skip,) = _records(results, "skip")
    assert skip["what"] == "start p-embedding-again" and "still running" in skip["why"]
    logs = tmp_path / "out" / "logs"
    assert (logs / "p-embedding.log").is_file() and (logs / "p-embedding-warm.log").is_file()


@pytest.fixture
def two_cpus() -> Iterator[tuple[int, list[int]]]:
    """One CPU of the test process's, and all of them; every thread's CPUs as they were afterwards (a `pin` of the
    runner moves this very process)."""
    everyone = sorted(os.sched_getaffinity(0))
    if len(everyone) < 2:
        pytest.skip("pinning is told apart from no pinning only on a machine with two CPUs or more")
    yield everyone[0], everyone
    pin([os.getpid()], frozenset(everyone))


def test_a_server_starts_on_the_cpus_its_spec_names_and_the_others_on_every_cpu_the_runner_had(
    gpu: Sandbox, tmp_path: Path, two_cpus: tuple[int, list[int]]
) -> None:
    first, everyone = two_cpus
    spec = _spec(_free_ports(2), [{"start": "p-llm"}, {"start": "p-embedding"}])
    spec["servers"]["p-llm"]["cpus"] = str(first)
    starts = _records(_run(tmp_path, spec), "start")
    assert [s["cpus"] for s in starts] == [str(first), format_cpus(everyone)]
    logs = tmp_path / "out" / "logs"
    assert f"fake vllm: cpus [{first}]" in (logs / "p-llm.log").read_text()
    assert f"fake vllm: cpus {everyone}" in (logs / "p-embedding.log").read_text()


def test_a_pin_moves_a_running_server_and_a_pinned_runner_still_starts_servers_on_every_cpu(
    gpu: Sandbox, tmp_path: Path, two_cpus: tuple[int, list[int]]
) -> None:
    first, everyone = two_cpus
    actions = [
        {"start": "p-llm"},
        {"pin": "p-llm", "cpus": str(first)},
        {"pin": "runner", "cpus": str(first)},
        {"start": "p-embedding"},
        {"pin": "runner", "cpus": "all"},
        {"pin": "p-reranker", "cpus": str(first)},  # never started
    ]
    results = _run(tmp_path, _spec(_free_ports(2), actions))
    pins = _records(results, "pin")
    assert [(p["target"], p["cpus"]) for p in pins] == [
        ("p-llm", str(first)),
        ("runner", str(first)),
        ("runner", format_cpus(everyone)),
    ]
    assert all(count > 0 for count in pins[0]["threads"].values())
    (skip,) = _records(results, "skip")
    assert skip["what"] == "pin p-reranker" and skip["why"] == "not running"
    logs = tmp_path / "out" / "logs"
    assert f"fake vllm: cpus at stop [{first}]" in (logs / "p-llm.log").read_text()
    assert f"fake vllm: cpus {everyone}" in (logs / "p-embedding.log").read_text()


@pytest.mark.parametrize(
    ("text", "cpus"), [("0-3,8", {0, 1, 2, 3, 8}), ("5", {5}), (" 2-3 , 7-8 ", {2, 3, 7, 8})]
)
def test_cpu_lists_are_read_as_linux_writes_them_and_written_back_the_same(text: str, cpus: set[int]) -> None:
    assert parse_cpus(text) == cpus
    assert parse_cpus(format_cpus(cpus)) == cpus


@pytest.mark.parametrize("text", ["", "3-1", "a"])
def test_a_cpu_list_that_names_no_cpu_or_runs_backwards_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpus(text)


def _sysfs(tmp_path: Path, siblings: dict[int, tuple[int, int]]) -> Path:
    """A /sys/devices/system/cpu where CPU n sits on (package, core) siblings[n]."""
    for cpu, (package, core) in siblings.items():
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return tmp_path


def test_physical_cores_keep_smt_siblings_together_however_linux_numbers_them(tmp_path: Path) -> None:
    # 4 CPUs on 2 cores, siblings numbered apart (0 and 2 share core 0), as many cloud hosts number them
    machine = cores(_sysfs(tmp_path, {0: (0, 0), 1: (0, 1), 2: (0, 0), 3: (0, 1)}))
    assert machine == [frozenset({0, 2}), frozenset({1, 3})]
    assert resolve("cores:1", machine) == {1, 3}
    assert resolve("1-2", machine) == {1, 2}  # a plain CPU list is taken as written
    with pytest.raises(ValueError, match="2 physical cores"):
        resolve("cores:0-2", machine)


def test_a_split_the_machine_cannot_hold_is_skipped_and_said_so(gpu: Sandbox, tmp_path: Path) -> None:
    spec = _spec(
        _free_ports(2), [{"start": "p-llm"}, {"pin": "p-llm", "cpus": "cores:4096"}, {"start": "p-embedding"}]
    )
    spec["servers"]["p-embedding"]["cpus"] = "cores:4096"
    results = _run(tmp_path, spec)
    assert [s["server"] for s in _records(results, "start")] == ["p-llm"]
    skips = {s["what"]: s["why"] for s in _records(results, "skip")}
    assert "physical cores" in skips["pin p-llm"] and "physical cores" in skips["start p-embedding"]


def test_a_cpu_list_that_names_none_of_the_runners_cpus_is_skipped_and_said_so(
    gpu: Sandbox, tmp_path: Path
) -> None:
    spec = _spec(
        _free_ports(2), [{"start": "p-llm"}, {"pin": "p-llm", "cpus": "4095"}, {"start": "p-embedding"}]
    )
    spec["servers"]["p-embedding"]["cpus"] = "4095"
    results = _run(tmp_path, spec)
    assert [s["server"] for s in _records(results, "start")] == ["p-llm"]
    skips = {s["what"]: s["why"] for s in _records(results, "skip")}
    assert skips["pin p-llm"].startswith("CPUs 4095 name none of the runner's")
    assert skips["start p-embedding"].startswith("CPUs 4095 name none of the runner's")
