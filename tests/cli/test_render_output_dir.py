"""`colo render --out DIR` never deletes or overwrites a file it did not write, and never leaves half a
render: it writes only into a new or empty directory or into its own earlier render (which it records),
and swaps the whole new render in once it is complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from colo.cli import main
from colo.output_dir import RECORD
from colo.render import APPLY_DIR
from tests.paths import REPO_ROOT


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def _render(out: Path, *, stack: str = "local", config: Path | None = None) -> int:
    chosen = ["--config", str(config)] if config else ["--stack", stack]
    return main(["render", *chosen, "--out", str(out)])


def test_a_project_directory_is_refused_naming_it_and_nothing_in_it_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "stacks", project / "stacks")
    shutil.copy(REPO_ROOT / "Pulumi.yaml", project / "Pulumi.yaml")
    before = _snapshot(project)
    assert _render(project) == 2
    err = capsys.readouterr().err
    assert f"--out {project}: is not empty and colo did not write it" in err
    assert "Pulumi.yaml" in err
    assert _render(project / "stacks") == 2
    assert "Pulumi.dev.yaml" in capsys.readouterr().err
    assert _snapshot(project) == before


def test_an_earlier_render_is_replaced_whole_with_nothing_stale_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render(out, stack="local") == 0
    assert list((out / APPLY_DIR).glob("*-deployment-chat.yaml"))
    assert _render(out, stack="dev") == 0
    assert not list((out / APPLY_DIR).glob("*-deployment-chat.yaml"))
    assert list((out / APPLY_DIR).glob("*-deployment-rag.yaml"))
    assert not list(tmp_path.glob(".out.colo-*")), "no staging or old copy is left beside it"


def test_a_file_someone_added_to_a_render_is_kept_and_the_render_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _render(out) == 0
    (out / APPLY_DIR / "90-my-ingress.yaml").write_text("kind: Ingress\n")
    before = _snapshot(out)
    assert _render(out, stack="dev") == 2
    assert f"{APPLY_DIR}/90-my-ingress.yaml" in capsys.readouterr().err
    assert _snapshot(out) == before


def test_a_manifest_edited_after_the_render_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _render(out) == 0
    edited = next((out / APPLY_DIR).glob("*-deployment-chat.yaml"))
    edited.write_text(edited.read_text() + "# tuned by hand\n")
    assert _render(out) == 2
    assert "(edited since colo wrote it)" in capsys.readouterr().err
    assert edited.read_text().endswith("# tuned by hand\n")


def test_a_directory_without_the_record_is_not_taken_for_an_earlier_render(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render(out) == 0
    (out / RECORD).unlink()
    before = _snapshot(out)
    assert _render(out) == 2
    assert _snapshot(out) == before


def test_an_existing_empty_directory_is_filled_in_place(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    inode = out.stat().st_ino
    assert _render(out) == 0
    assert out.stat().st_ino == inode
    assert (out / "summary.md").is_file()


def test_a_refused_config_leaves_the_previous_render_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _render(out) == 0
    before = _snapshot(out)
    bad = tmp_path / "Pulumi.bad.yaml"
    source = yaml.safe_load((REPO_ROOT / "stacks" / "Pulumi.local.yaml").read_text())
    source["config"]["colo:pairs"][0]["llm"]["maxModelLen"] = 10_000_000
    bad.write_text(yaml.safe_dump(source))
    assert _render(out, config=bad) == 1
    assert _snapshot(out) == before


def test_a_write_that_fails_halfway_leaves_the_previous_render_and_no_debris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _render(out) == 0
    before = _snapshot(out)
    original = Path.write_bytes
    writes = 0

    def disk_fills_up(path: Path, data: bytes) -> int:
        nonlocal writes
        writes += 1
        if writes > 3:
            raise OSError(28, "No space left on device")
        return original(path, data)

    monkeypatch.setattr(Path, "write_bytes", disk_fills_up)
    assert _render(out, stack="dev") == 2
    assert "No space left on device" in capsys.readouterr().err
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_file_given_as_the_output_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    assert _render(target) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert target.read_text() == "mine\n"
