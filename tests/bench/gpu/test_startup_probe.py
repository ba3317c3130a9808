"""The startup probe: it wraps vLLM's startup methods as their modules are imported, never changes what they
return, and replays PyTorch's allocation trace into the peak and what made it."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.gpu.harness import startup_probe
from bench.gpu.harness.startup_probe import MIB, Recorder, _PatchingFinder, replay

WORKER = """
class Worker:
    def load_model(self):
        return "loaded"

    def determine_available_memory(self):
        return 42
"""


def _alloc(addr: int, mib: float, filename: str, line: int = 1) -> dict[str, Any]:
    frames = [{"filename": "/usr/lib/python3/torch/nn/functional.py", "line": 9, "name": "linear"}]
    frames.append({"filename": filename, "line": line, "name": "forward"})
    return {"action": "alloc", "addr": addr, "size": int(mib * MIB), "frames": frames}


def _free(addr: int, mib: float) -> dict[str, Any]:
    return {"action": "free_completed", "addr": addr, "size": int(mib * MIB), "frames": []}


def test_the_peak_is_the_most_alive_at_once_and_names_the_vllm_lines_that_held_it() -> None:
    mlp = "/site/vllm/model_executor/layers/activation.py"
    trace = [
        _alloc(1, 100, mlp, 10),
        _alloc(2, 50, mlp, 20),
        _free(1, 100),
        _alloc(3, 30, "/site/vllm/v1/worker/gpu_model_runner.py"),
        _free(99, 7),  # a block from before the recording: not counted
    ]
    result = replay(trace)
    assert result["peak_increase_mib"] == 150
    assert [s["site"] for s in result["at_peak"]] == [
        "vllm/model_executor/layers/activation.py:10:forward",
        "vllm/model_executor/layers/activation.py:20:forward",
    ]
    assert result["still_allocated_mib"] == 80
    assert result["frees_of_earlier_blocks"] == 1


def test_benchmarking_buffers_are_measured_apart() -> None:
    bench = "/site/triton/testing.py"
    trace = [_alloc(1, 256, bench), _free(1, 256), _alloc(2, 256, bench), _alloc(3, 10, "/site/vllm/x.py")]
    assert replay(trace)["benchmark_buffers_peak_mib"] == 256


def test_the_worker_is_wrapped_on_import_and_answers_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "vllm" / "v1" / "worker"
    package.mkdir(parents=True)
    for folder in (tmp_path / "vllm", tmp_path / "vllm" / "v1", package):
        (folder / "__init__.py").write_text("")
    (package / "gpu_worker.py").write_text(WORKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    recorder = Recorder(str(tmp_path / "probe"))
    monkeypatch.setattr(recorder, "reading", lambda: {"outside_torch_mib": 1.0})
    finder = _PatchingFinder(recorder)
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    module = importlib.import_module("vllm.v1.worker.gpu_worker")
    worker = module.Worker()
    assert worker.load_model() == "loaded" and worker.determine_available_memory() == 42
    written = json.loads(recorder.path.read_text())
    assert [(e["call"], e["phase"]) for e in written["events"]] == [
        ("gpu_worker.Worker.load_model", "enter"),
        ("gpu_worker.Worker.load_model", "exit"),
        ("gpu_worker.Worker.determine_available_memory", "enter"),
        ("gpu_worker.Worker.determine_available_memory", "exit"),
    ]


def test_only_the_first_calls_of_a_method_are_kept_outside_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Runner:
        def _dummy_run(self) -> int:
            return 1

    recorder = Recorder(str(tmp_path / "probe"))
    monkeypatch.setattr(recorder, "reading", lambda: {})
    recorder.wrap(Runner, "_dummy_run")
    for _ in range(startup_probe.CALLS_KEPT + 3):
        assert Runner()._dummy_run() == 1
    assert len(recorder.events) == 2 * startup_probe.CALLS_KEPT


def test_serving_steps_count_only_after_warm_up_and_keep_the_largest_readings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Scheduled:
        def __init__(self, tokens: int) -> None:
            self.total_num_scheduled_tokens = tokens

    class Worker:
        def compile_or_warm_up_model(self) -> None:
            return None

    class Runner:
        def execute_model(self, scheduler_output: Scheduled) -> str:
            return "out"

    recorder = Recorder(str(tmp_path / "probe"))
    monkeypatch.setattr(recorder, "reading", lambda: {})
    readings = iter(
        [
            {
                "reserved_mib": 100.0,
                "allocated_mib": 60.0,
                "inactive_split_mib": 5.0,
                "outside_torch_mib": 9.0,
            },
            {
                "reserved_mib": 140.0,
                "allocated_mib": 50.0,
                "inactive_split_mib": 30.0,
                "outside_torch_mib": 9.0,
            },
            {
                "reserved_mib": 120.0,
                "allocated_mib": 70.0,
                "inactive_split_mib": 2.0,
                "outside_torch_mib": 11.0,
            },
        ]
    )
    monkeypatch.setattr(recorder, "serving_reading", lambda: next(readings))
    recorder.wrap(Worker, "compile_or_warm_up_model")
    recorder.wrap(Runner, "execute_model")
    runner = Runner()
    assert runner.execute_model(Scheduled(8192)) == "out"  # warm-up's own steps: not serving
    assert recorder.serving == {"steps": 0}
    Worker().compile_or_warm_up_model()
    for tokens in (512, 8192, 200):
        assert runner.execute_model(Scheduled(tokens)) == "out"
    serving = recorder.serving
    assert serving["steps"] == 3 and serving["max_tokens"] == 8192
    assert serving["first"]["reserved_mib"] == 100.0
    assert (
        serving["max_reserved_mib"]["reserved_mib"] == 140.0 and serving["max_reserved_mib"]["tokens"] == 8192
    )
    assert serving["max_inactive_split_mib"]["tokens"] == 8192
    assert serving["max_allocated_mib"]["tokens"] == 200
    assert serving["max_outside_torch_mib"]["outside_torch_mib"] == 11.0
    assert json.loads(recorder.path.read_text())["serving"]["steps"] >= 1  # written on the first step
    assert not [e for e in recorder.events if e["call"].endswith("execute_model")]
