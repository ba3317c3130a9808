"""scripts/extract-vllm-serve-cli.py appends a new release to the committed table without re-reading the old ones.

A new release is added with `--releases X`: the committed serve_cli.yaml and oracle are read back, and the new
release's reading is appended. These tests hold the pure parts to that: the committed file reads back into the
same ranges it was written from, and appending extends or adds a range, never rewriting an older one.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "extract_vllm_serve_cli", REPO / "scripts" / "extract-vllm-serve-cli.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def _table(options: dict[str, Any]) -> dict[str, Any]:
    parser = {
        "prog": "vllm serve",
        "allow_abbrev": True,
        "positionals": [{"dest": "model_tag", "nargs": "?"}],
        "top": ["--help", "-h"],
        "rewriting": {"underscores": "before_dot"},
        "task_hint": None,
        "omni_exit": None,
    }
    return {**parser, "types": {"int": {"kind": "int"}}, "options": options}


OLD = _table({"--port": {"dest": "port", "action": "store", "type": "int"}})
NEW = _table(
    {
        "--port": {"dest": "port", "action": "store", "type": "int"},
        "--enable-extensible-kv-cache": {"dest": "enable_extensible_kv_cache", "action": "enable_disable"},
    }
)


def _result(table: dict[str, Any], release: str, outcome: dict[str, Any]) -> dict[str, Any]:
    return {"table": table, "source": f"vllm {release} wheel", "oracle": {"--port 1": outcome}}


@pytest.fixture
def committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed table and oracle of two releases, 0.1.0 and 0.2.0, read alike."""
    monkeypatch.setattr(SCRIPT, "TABLE", tmp_path / "serve_cli.yaml")
    monkeypatch.setattr(SCRIPT, "ORACLE", tmp_path / "oracle.json")
    monkeypatch.setattr(SCRIPT, "RELEASES", ["0.1.0", "0.2.0", "0.3.0"])
    results = {release: _result(OLD, release, {"parses": True}) for release in ("0.1.0", "0.2.0")}
    SCRIPT.write(SCRIPT.ranges_of(results), SCRIPT.oracle_of(results))
    return tmp_path


def test_the_committed_table_reads_back_into_the_ranges_it_was_written_from() -> None:
    text = SCRIPT.TABLE.read_text()
    ranges = SCRIPT.read_table(text)
    assert SCRIPT.render_table(ranges) == text
    assert ranges[0]["first"] == "0.8.0" and ranges[-1]["last"] == SCRIPT.RELEASES[-1]


def test_a_release_read_alike_extends_the_newest_range_and_its_oracle_runs(committed: Path) -> None:
    ranges, oracle = SCRIPT.append_releases({"0.3.0": _result(OLD, "0.3.0", {"parses": True})})
    assert [(r["first"], r["last"]) for r in ranges] == [("0.1.0", "0.3.0")]
    assert oracle["lines"]["--port 1"] == [{"first": "0.1.0", "last": "0.3.0", "outcome": {"parses": True}}]


def test_a_release_read_differently_adds_a_range_that_states_only_its_changes(committed: Path) -> None:
    refused = {"exit": 2, "message": "vllm serve: error: x"}
    SCRIPT.write(*SCRIPT.append_releases({"0.3.0": _result(NEW, "0.3.0", refused)}))
    ranges = SCRIPT.read_table(SCRIPT.TABLE.read_text())
    assert [(r["first"], r["last"]) for r in ranges] == [("0.1.0", "0.2.0"), ("0.3.0", "0.3.0")]
    assert ranges[1]["table"] == NEW
    assert "--enable-extensible-kv-cache" in SCRIPT.TABLE.read_text().split("- first: 0.3.0", 1)[1]
    runs = json.loads(SCRIPT.ORACLE.read_text())["lines"]["--port 1"]
    assert [(run["first"], run["last"]) for run in runs] == [("0.1.0", "0.2.0"), ("0.3.0", "0.3.0")]


def test_a_release_missing_from_the_scripts_list_is_not_appended(committed: Path) -> None:
    with pytest.raises(SystemExit, match=r"add 0\.4\.0 to RELEASES"):
        SCRIPT.append_releases({"0.4.0": _result(OLD, "0.4.0", {"parses": True})})


def test_a_release_the_table_already_spans_is_not_appended(committed: Path) -> None:
    with pytest.raises(SystemExit, match=r"not newer than 0\.2\.0"):
        SCRIPT.append_releases({"0.2.0": _result(NEW, "0.2.0", {"parses": True})})
