"""`colo pack` on the command line: the table, JSON, the stack file it writes (and refuses to overwrite),
and the exit codes every colo command uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colo.cli import main
from colo.cli.common import ExitCode
from tests.paths import REPO_ROOT

FIELD_REPORT = str(REPO_ROOT / "packs" / "field-report.yaml")


def test_the_table_shows_the_best_layout_first_with_what_binds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--models", FIELD_REPORT, "--alternatives", "1"]) == ExitCode.OK
    out = capsys.readouterr().out
    summary = out.split("layout 1")[0]
    assert "3 x g6e.xlarge" in summary
    assert "binds" in summary
    assert "cheaper instance types passed over" in out


def test_json_is_all_that_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--models", FIELD_REPORT, "--alternatives", "0", "--format", "json"]) == ExitCode.OK
    view = json.loads(capsys.readouterr().out)
    best = view["layouts"][0]
    assert best["instance_type"] == "g6e.xlarge"
    assert {s["role"] for s in best["servers"]} == {"llm", "embedding"}


def test_the_written_stack_is_accepted_by_colo_plan_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "Pulumi.packed.yaml"
    assert (
        main(["pack", "--models", FIELD_REPORT, "--alternatives", "0", "--write", str(target)]) == ExitCode.OK
    )
    assert main(["plan", "--config", str(target)]) == ExitCode.OK
    assert "3 node(s) of g6e.xlarge" in capsys.readouterr().out
    # A file pack wrote may be written again.
    assert (
        main(["pack", "--models", FIELD_REPORT, "--alternatives", "0", "--write", str(target)]) == ExitCode.OK
    )


def test_a_stack_file_pack_did_not_write_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "Pulumi.mine.yaml"
    target.write_text("config: {}\n")
    assert main(["pack", "--models", FIELD_REPORT, "--write", str(target)]) == ExitCode.INVALID
    assert "colo pack did not write it" in capsys.readouterr().err
    assert target.read_text() == "config: {}\n"


def test_a_stack_is_read_for_its_requirements(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--stack", "prod", "--alternatives", "0"]) == ExitCode.OK
    assert "the stack's own layout" in capsys.readouterr().out


def test_models_and_stack_together_are_refused_as_invalid_arguments() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["pack", "--models", FIELD_REPORT, "--stack", "prod"])
    assert exit_info.value.code == ExitCode.INVALID


def test_a_region_without_prices_is_an_invalid_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "--models", FIELD_REPORT, "--region", "eu-nowhere-1"]) == ExitCode.INVALID
    assert "priced regions" in capsys.readouterr().err


def test_what_no_allowed_instance_holds_fails_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    # T4s hold none of the three, even four of them on one node (L4s do, four to a group: see tests/pack)
    assert main(["pack", "--models", FIELD_REPORT, "--families", "g4dn"]) == ExitCode.FAILS
    err = capsys.readouterr().err
    assert "cannot be met on any allowed instance type" in err
    assert "Qwen/Qwen3.6-27B-FP8" in err
    assert "(tried on 1, 2, 4 GPUs of one node)" in err


def test_a_cheaper_layout_than_the_stack_s_own_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    # The local stack names a g6e.xlarge (L40S) for an 8B FP8 model that an L4 node holds.
    assert main(["pack", "--stack", "local", "--alternatives", "0"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "the stack's own layout: 1 x g6e.xlarge" in out
    assert "cheaper because it buys" in out


def test_a_stack_that_names_no_instance_type_is_not_priced_as_the_schema_default() -> None:
    from colo.config import parse_stack_config
    from colo.pack.requirements import request_from_stack
    from colo.stackfiles import load_stack

    values = dict(load_stack("local").values)
    values["nodePool"] = {k: v for k, v in values["nodePool"].items() if k != "instanceType"}
    assert request_from_stack(parse_stack_config(values), "stack local").current_instance is None
