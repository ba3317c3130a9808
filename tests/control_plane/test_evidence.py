"""The e2e evidence recorder writes only where it is asked to, and sums an engine run up as `pulumi up` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colo.inline_engine import Outcome, Step
from tests.control_plane.evidence import EVIDENCE_DIR, record, step_summary


def test_nothing_is_written_unless_a_directory_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVIDENCE_DIR, raising=False)
    assert record("anything", {"a": 1}) is None


def test_the_figures_are_written_as_json_under_the_named_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(EVIDENCE_DIR, str(tmp_path / "evidence"))
    path = record("local-placement", {"pair": [["pod-1", "node-a"]]})
    assert path == tmp_path / "evidence" / "local-placement.json"
    assert json.loads(path.read_text()) == {"pair": [["pod-1", "node-a"]]}


def test_an_engine_run_is_summed_up_by_operation_and_type() -> None:
    steps = [
        Step("create", "urn:a", "kubernetes:apps/v1:Deployment", (), ()),
        Step("create", "urn:b", "kubernetes:core/v1:Service", (), ()),
        Step("create", "urn:c", "kubernetes:core/v1:Service", (), ()),
    ]
    summary = step_summary(Outcome("up", True, steps, [], ""))
    assert summary == {
        "succeeded": True,
        "steps": {"create kubernetes:apps/v1:Deployment": 1, "create kubernetes:core/v1:Service": 2},
        "errors": [],
    }
