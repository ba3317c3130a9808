"""The budget picture outside the terminal: `colo render` writes one SVG per GPU beside summary.md, and
`colo diff --pictures DIR` writes each GPU before and after and shows them side by side in the comment."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from colo.cli import main
from colo.cli.common import load_config
from colo.output_dir import RECORD
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack

# the session's renders of every stack (conftest.rendered) are made once, on one worker
pytestmark = pytest.mark.xdist_group("rendered")

ROOT = Path(__file__).resolve().parents[2]


def test_render_writes_an_svg_per_gpu_beside_the_summary(rendered: dict[str, Path]) -> None:
    out = rendered["prod"]
    plan = make_plan(load_config(load_stack("prod")))
    names = sorted(path.name for path in out.glob("summary-gpu-*.svg"))
    assert names == sorted(f"summary-gpu-{pair.placement.gpu}.svg" for pair in plan.pairs)
    summary = (out / "summary.md").read_text()
    for name in names:
        assert f"]({name})" in summary
        root = ElementTree.fromstring((out / name).read_text())
        assert root.tag.endswith("svg")
    assert set(names) <= set(json.loads((out / RECORD).read_text())["files"])  # colo's own, replaceable
    assert not list((out / "manifests").glob("*.svg"))  # kubectl apply -f manifests/ takes YAML only


def test_diff_with_pictures_writes_both_sides_and_links_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = tmp_path / "Pulumi.local.yaml"
    original = (ROOT / "stacks" / "Pulumi.local.yaml").read_text()
    head.write_text(
        original.replace("maxModelLen: 32768", "maxModelLen: 32768\n        gpuMemoryUtilization: 0.8")
    )
    pictures = tmp_path / "pictures"
    argv = [
        "diff",
        "--config",
        str(head),
        "--base-config",
        "stacks/Pulumi.local.yaml",
        "--pictures",
        str(pictures),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in pictures.glob("*.svg")) == ["gpu-0-base.svg", "gpu-0-head.svg"]
    assert f"![gpu-0 base]({pictures.as_posix()}/gpu-0-base.svg)" in out
    assert f"![gpu-0 head]({pictures.as_posix()}/gpu-0-head.svg)" in out
    assert (pictures / "gpu-0-base.svg").read_text() != (pictures / "gpu-0-head.svg").read_text()


def test_diff_refuses_a_pictures_directory_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    argv = [
        "diff",
        "--stack",
        "local",
        "--base-config",
        "stacks/Pulumi.local.yaml",
        "--pictures",
        str(tmp_path),
    ]
    assert main(argv) == 2
    assert "--pictures" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
