"""The example project without the Pulumi CLI: `colo render --cwd` runs it with its own config namespace, and
the Pulumi-CLI route says in one sentence what it needs instead of ending in a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from colo import inline_engine
from colo.cli import main
from tests.examples.example_project import EXAMPLE, TOO_LONG, example_copy


def test_render_runs_the_example_with_its_own_config_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["render", "--cwd", str(EXAMPLE), "--stack", "dev", "--out", str(out)]) == 0
    capsys.readouterr()
    objects = [yaml.safe_load(path.read_text()) for path in sorted((out / "manifests").glob("*.yaml"))]
    assert {o["metadata"]["namespace"] for o in objects} == {"team-ml"}  # colo-example:namespace
    claim = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["storageClassName"] == "fast-ssd"  # colo-example:storageClass
    assert any(o["kind"] == "Service" and o["metadata"]["name"] == "chat-api" for o in objects)


def test_render_of_the_example_refuses_what_its_pair_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = example_copy(tmp_path / "example", maxModelLen=TOO_LONG)
    assert main(["render", "--cwd", str(project), "--stack", "dev", "--out", "out"]) == 1
    err = capsys.readouterr().err
    assert "llm.maxModelLen" in err and "unknown config key" not in err
    assert not (project / "out").exists()


def test_the_engine_route_without_the_pulumi_cli_says_so_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no pulumi here
    argv = [
        "preview",
        "--stack",
        "dev",
        "--project-dir",
        str(EXAMPLE),
        "--program",
        str(EXAMPLE / "__main__.py"),
    ]
    assert inline_engine.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no `pulumi` on PATH" in err and "colo render --cwd" in err
