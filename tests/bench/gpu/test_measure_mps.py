"""measure_mps.py's orchestration, against a fake worker, MPS daemon and nvidia-smi: the MPS server separated from
the clients' contexts, figures per thread percentage, the pinned-limit probe, a catalog entry, nothing left."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.gpu import measure_mps
from tests.bench.gpu.test_run_pairs import NVIDIA_SMI, gpu
from tests.bench.gpu.test_run_pairs_mps import FAKE_CONTROL, _daemon_running
from tests.scripts.fakes import Sandbox

FAKE_WORKER = Path(__file__).resolve().parent / "fake_mps_worker.py"
NAME_QUERY = """case "$*" in
  *query-gpu=name,driver_version,memory.total*) echo "NVIDIA H200, 580.159.04, 143771"; exit 0 ;;
  *query-compute-apps=pid,process_name,used_memory*) echo "4242, nvidia-cuda-mps-server, 66 MiB"; exit 0 ;;
esac
"""

__all__ = ["gpu"]


@pytest.fixture
def measuring(gpu: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    gpu.fake("nvidia-smi", NAME_QUERY + NVIDIA_SMI)
    gpu.fake("nvidia-cuda-mps-control", f"source {FAKE_CONTROL}\n")
    monkeypatch.setattr(measure_mps, "SETTLE_S", 0.0)
    return gpu


def _measure(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "mps.json"
    args = ["--workdir", str(tmp_path / "work"), "--out", str(out), "--worker", str(FAKE_WORKER), *extra]
    code = measure_mps.main([*args, "--python", sys.executable])
    return code, dict(json.loads(out.read_text()))


def test_the_server_is_the_first_clients_context_step_less_the_seconds(
    measuring: Sandbox, tmp_path: Path
) -> None:
    code, result = _measure(tmp_path)
    assert code == 0, result.get("error")
    figures = result["mps"]["figures"]
    assert figures["server_mib"] == 66
    assert figures["client_context_mib"] == {"100": 600, "50": 450, "25": 300}
    assert figures["client_cublas_mib"] == {"100": 120, "50": 100, "25": 80}
    assert figures["sm_count_by_percentage"] == {"100": 132, "50": 66, "25": 33}
    assert (result["plain"]["context_mib"], result["plain"]["cublas_mib"]) == (621, 118)
    attached = result["mps"]["status"]["attached"]
    assert len(attached) == 4 and all(attached.values())


def test_the_catalog_entry_carries_the_figures_and_where_they_come_from(
    measuring: Sandbox, tmp_path: Path
) -> None:
    _, result = _measure(tmp_path)
    entry = result["catalog_entry"]
    assert entry["server_mib"] == 66 and entry["client_context_mib"]["25"] == 300
    assert entry["client_sm_count"] == {"100": 132, "50": 66, "25": 33}
    assert entry["mem_get_info_reports_pinned_limit"] is False
    assert entry["source"].startswith("measured ") and "NVIDIA H200" in entry["source"]
    assert "driver 580.159.04" in entry["source"] and "plain context 621 MiB" in entry["source"]


def test_the_pinned_limit_probe_says_whether_mem_get_info_reports_the_limit(
    measuring: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PINNED_REPORTS", "1")
    _, result = _measure(tmp_path, "--pinned-limit-gib", "8")
    pinned = result["pinned"]
    assert pinned["limit_gib"] == 8 and pinned["mem_get_info_total_gib"] == 8.0
    assert pinned["mem_get_info_reports_pinned_limit"] is True
    assert pinned["allocates_2_gib_under_the_limit"] and not pinned["allocates_2_gib_over_the_limit"]


def test_nothing_is_left_running_and_the_daemon_quits(measuring: Sandbox, tmp_path: Path) -> None:
    _, result = _measure(tmp_path)
    assert result["daemon_stop"]["forced"] is False
    assert not _daemon_running(tmp_path / "work")
    left = {p.name for p in (measuring.root / "gpu-state").iterdir()}
    assert left <= {"mps-server"}  # only the fake server's file, which a real server frees on quit


def test_a_failing_measurement_still_stops_the_daemon_and_says_why(
    measuring: Sandbox, tmp_path: Path
) -> None:
    code, result = _measure(tmp_path, "--percentages", "100", "50")
    assert code == 1 and "same percentage" in result["error"]
    assert not _daemon_running(tmp_path / "work")
