"""The probe report reads each server start's probe file from a run's log archive."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from bench.gpu.probe_report import main, non_torch_by_call, probes, serving_lines, summary

RECORD = {
    "pid": 7,
    "events": [
        {"t": 1.0, "call": "gpu_worker.Worker.init_device", "phase": "exit", "outside_torch_mib": 620.0},
        {"t": 2.0, "call": "gpu_worker.Worker.load_model", "phase": "enter", "outside_torch_mib": 620.0},
        {"t": 3.0, "call": "gpu_worker.Worker.load_model", "phase": "exit", "outside_torch_mib": 690.5},
        {
            "t": 9.0,
            "call": "gpu_model_runner.GPUModelRunner.profile_run",
            "phase": "exit",
            "outside_torch_mib": 845.0,
        },
    ],
    "streams": [{"t": 2.5, "thread": "MainThread", "by": ["a.py:1:f", "b.py:2:g"]}],
    "threads": [],
    "profiles": [
        {
            "call": "gpu_model_runner.GPUModelRunner.profile_run",
            "peak_increase_mib": 330.0,
            "benchmark_buffers_peak_mib": 0.0,
            "still_allocated_mib": 32.0,
            "at_peak": [{"site": "vllm/x.py:1:forward", "mib": 96.0, "count": 1}],
        }
    ],
}


def test_non_torch_growth_is_measured_from_the_workers_snapshot() -> None:
    rows = non_torch_by_call(RECORD)
    assert [(r["call"].rsplit(".", 1)[-1], r["growth_mib"]) for r in rows] == [
        ("load_model", 70.5),
        ("profile_run", 225.0),
    ]


def test_a_record_without_the_snapshot_has_no_growth_to_report() -> None:
    assert non_torch_by_call({"events": RECORD["events"][1:]}) == []


def test_every_probe_file_of_the_archive_is_reported_by_its_log_name(tmp_path: Path) -> None:
    archive = tmp_path / "logs.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in {
            "logs/hybrid-embedding-probe-7.json": json.dumps(RECORD),
            "logs/hybrid-embedding.log": "x",
        }.items():
            blob = data.encode()
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    (found,) = probes(archive)
    assert found[0] == "hybrid-embedding"
    assert summary(*found)["profiles"][0]["peak_increase_mib"] == 330.0
    out = tmp_path / "probe.json"
    assert main([str(archive), "--json", str(out)]) == 0
    assert json.loads(out.read_text())[0]["server"] == "hybrid-embedding"


def test_serving_maxima_are_set_beside_the_first_step() -> None:
    first = {
        "reserved_mib": 300.0,
        "allocated_mib": 40.0,
        "inactive_split_mib": 1.0,
        "outside_torch_mib": 9.0,
    }
    top = {"tokens": 8192, "step": 7, **first, "reserved_mib": 420.0, "inactive_split_mib": 96.0}
    serving = {"steps": 9, "max_tokens": 8192, "first": {"tokens": 512, **first}, "max_reserved_mib": top}
    lines = serving_lines(serving)
    assert lines[0] == "serving: 9 steps, up to 8192 tokens a step"
    assert lines[1].startswith("  most reserved: 420.0 MiB (first step 300.0) at a step of 8192 tokens")
    assert "inactive 96.0" in lines[1] and len(lines) == 2


def test_a_probe_without_serving_steps_says_so() -> None:
    assert serving_lines({"steps": 0}) == ["serving: no step recorded"]
