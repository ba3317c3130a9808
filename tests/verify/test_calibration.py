"""`colo verify --record` writes observed constants with provenance; `colo plan` uses them for that GPU and
release only, and says which figures are calibrated and from where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.catalog import MIB, gpu
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
    assert (entry["gpu"], entry["vllm_version"]) == ("A100-40GB", "0.15.1")
    assert entry["context_mib"] == 522  # (39.39 - 38.88) GiB, from the server that started first
    assert entry["non_torch_growth_mib"] == 205  # the embedder's 0.2 GiB
    # The LLM's log (eager, no summary line) gives nothing to invert, so only the embedder is observed.
    (observed,) = entry["observed"]
    assert entry["cudagraph_kib_per_graph_layer"] == observed["figures"]["cudagraph_kib_per_graph_layer"]
    assert (observed["server"], observed["model"], observed["vllm_version"]) == (
        "chat/embedding",
        "BAAI/bge-m3",
        "0.15.1",
    )
    assert (
        observed["driver"] == "580.95.05"
        and observed["gpu_name"].startswith("A100-40GB")
        and observed["date"]
    )


def test_record_says_which_servers_gave_nothing_to_record(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(
        [
            "verify",
            "--config",
            str(stack),
            "--logs",
            str(_logs(tmp_path)),
            "--record",
            str(tmp_path / "c.yaml"),
        ]
    )
    err = capsys.readouterr().err
    assert "not recorded: chat-llm: its log holds no figure colo can calibrate from" in err
    assert "recorded in" in err and "chat-embedding: context_mib 522" in err


def test_plan_uses_the_calibrated_figures_and_shows_where_they_come_from(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, _ = _plan(capsys, write_stack(tmp_path, "before"))
    after, text = _plan(capsys, write_stack(tmp_path, "after", calibration=str(recorded)))
    catalog_context = gpu("A100-40GB").context_bytes // MIB
    for name in ("chat-llm", "chat-embedding"):
        assert _servers(before)[name]["calibration"] is None
        figures = _servers(after)[name]["calibration"]["figures"]
        assert figures["context_mib"] == {"calibrated": 522, "catalog": catalog_context}
        assert _servers(after)[name]["context_gib"] == round(522 / 1024, 2)
    # The graph constant came from the embedder's capture, so its plan now reproduces that capture.
    assert _servers(after)["chat-embedding"]["cuda_graph_gib"] == pytest.approx(0.57, abs=0.01)
    line = next(line for line in text.splitlines() if line.startswith("calibrated (chat-llm)"))
    assert f"context_mib 522 (catalog {catalog_context})" in line
    assert f"from {recorded} (A100-40GB, vLLM 0.15.1)" in line
    assert "chat/embedding (BAAI/bge-m3) on" in line and "driver 580.95.05" in line


@pytest.mark.parametrize(
    ("gpu", "version"),
    [("A100-40GB", "0.19.1"), ("A100-80GB", "0.15.1")],
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
                server["vllm"] = {**server["vllm"], "version": version}
                if version != "0.15.1":
                    server["vllm"].pop("build", None)  # the catalog knows how 0.19.1's image was built
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
    assert main(["plan", "--config", str(stack)]) == 2  # an invalid config, like an unreadable profile
    assert "colo:budget.calibration: cannot read" in capsys.readouterr().err


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
    assert len(entry["observed"]) == 2
    assert entry["context_mib"] == 604  # (39.39 - 38.80) GiB: the larger of the two


def test_recording_into_a_file_that_is_no_calibration_exits_2_and_leaves_it_alone(
    stack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "notes.yaml"
    target.write_text("- a list\n- not a calibration\n")
    code = main(["verify", "--config", str(stack), "--logs", str(_logs(tmp_path)), "--record", str(target)])
    assert code == 2
    assert "nothing recorded" in capsys.readouterr().err
    assert target.read_text() == "- a list\n- not a calibration\n"
