"""`colo verify --record` writes observed constants with provenance; `colo plan` uses them for that GPU and
release only, and says which figures are calibrated and from where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.cli import main
from tests.verify.conftest import EMBEDDER_LOG, REAL_LOG, excerpt, stack_config, write_stack


def _logs(directory: Path) -> Path:
    logs = directory / "logs"
    logs.mkdir()
    (logs / "chat-llm.log").write_text(excerpt(REAL_LOG))
    (logs / "chat-embedding.log").write_text(EMBEDDER_LOG)
    return logs


def _plan(capsys: pytest.CaptureFixture[str], stack: Path) -> tuple[dict[str, Any], str]:
    main(["plan", "--config", str(stack), "--format", "json"])
    view = json.loads(capsys.readouterr().out)
    main(["plan", "--config", str(stack)])
    return view, capsys.readouterr().out


def _servers(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s["memory"] for pair in view["pairs"] for s in pair["servers"]}


@pytest.fixture
def recorded(stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    calibration = tmp_path / "calibration.yaml"
    code = main(
        [
            "verify",
            "--config",
            str(stack),
            "--logs",
            str(_logs(tmp_path)),
            "--record",
            str(calibration),
            "--driver",
            "580.95.05",
        ]
    )
    capsys.readouterr()
    assert code in (0, 1)
    return calibration


def test_record_writes_each_figure_with_its_provenance(recorded: Path) -> None:
    (entry,) = yaml.safe_load(recorded.read_text())["calibrations"]
    assert (entry["gpu"], entry["vllm_version"]) == ("A100-40GB", "0.19.1")
    assert entry["context_mib"] == 522  # (39.39 - 38.88) GiB, from the server that started first
    assert entry["non_torch_growth_mib"] == 205  # the embedder's 0.2 GiB; the LLM's log has no summary
    sources = {o["server"]: o for o in entry["observed"]}
    graphs = [o["figures"]["cudagraph_kib_per_graph_layer"] for o in sources.values()]
    assert entry["cudagraph_kib_per_graph_layer"] == max(graphs)  # the LLM's 2.44 GiB, the embedder's 0.57
    assert set(sources) == {"chat/llm", "chat/embedding"}
    llm = sources["chat/llm"]
    assert (llm["model"], llm["vllm_version"], llm["driver"]) == ("Qwen/Qwen3-8B", "0.19.1", "580.95.05")
    assert llm["gpu_name"].startswith("A100-40GB") and llm["date"]


def test_plan_uses_the_calibrated_figures_and_shows_where_they_come_from(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, _ = _plan(capsys, write_stack(tmp_path, "before"))
    after, text = _plan(capsys, write_stack(tmp_path, "after", calibration=str(recorded)))
    llm_before, llm_after = _servers(before)["chat-llm"], _servers(after)["chat-llm"]
    assert llm_before["calibration"] is None
    figures = llm_after["calibration"]["figures"]
    assert figures["context_mib"] == {"calibrated": 522, "catalog": 520}
    # The graph constant is the larger of the two servers' (the embedder's is larger per layer), so the
    # LLM is budgeted at least the 2.44 GiB its capture took.
    assert llm_before["cuda_graph_gib"] == 2.49
    assert llm_after["cuda_graph_gib"] >= 2.44
    assert (
        figures["cudagraph_kib_per_graph_layer"]["calibrated"]
        != figures["cudagraph_kib_per_graph_layer"]["catalog"]
    )
    line = next(line for line in text.splitlines() if line.startswith("calibrated (chat-llm)"))
    assert "context_mib 522 (catalog 520)" in line
    assert f"from {recorded} (A100-40GB, vLLM 0.19.1)" in line
    assert "chat/llm (Qwen/Qwen3-8B) on" in line and "driver 580.95.05" in line


@pytest.mark.parametrize(
    ("gpu", "version"),
    [("A100-40GB", "0.20.2"), ("A100-80GB", "0.19.1")],
    ids=["same GPU, another release", "same release, another GPU"],
)
def test_a_calibration_never_reaches_another_gpu_or_release(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str, version: str
) -> None:
    def stack(name: str, **budget: object) -> Path:
        raw = stack_config(**budget)
        raw["config"]["colo:nodePool"]["gpu"] = gpu
        for server in raw["config"]["colo:pairs"][0].values():
            if isinstance(server, dict):
                server["vllm"] = {"version": version}
        path = tmp_path / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump(raw))
        return path

    without, _ = _plan(capsys, stack("without"))
    with_calibration, text = _plan(capsys, stack("with", calibration=str(recorded)))
    assert with_calibration == without
    assert "calibrated (" not in text


def test_an_unreadable_calibration_is_a_problem_of_its_config_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = write_stack(tmp_path, calibration=str(tmp_path / "nowhere.yaml"))
    assert main(["plan", "--config", str(stack)]) == 1
    assert "colo:budget.calibration: cannot read" in capsys.readouterr().out


def test_recording_twice_keeps_every_observation_and_the_largest_figures(
    stack: Path, recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    again = tmp_path / "again"
    again.mkdir()
    logs = _logs(again)
    (logs / "chat-embedding.log").write_text(EMBEDDER_LOG.replace("(38.88/39.39", "(38.80/39.39"))
    main(["verify", "--config", str(stack), "--logs", str(logs), "--record", str(recorded)])
    capsys.readouterr()
    (entry,) = yaml.safe_load(recorded.read_text())["calibrations"]
    assert len(entry["observed"]) == 4
    assert entry["context_mib"] == 604  # (39.39 - 38.80) GiB: the larger of the two
