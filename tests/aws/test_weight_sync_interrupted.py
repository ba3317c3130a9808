"""An update of a published copy, killed at any point, is completed by the next run, which publishes only a
verified copy; while it is interrupted the target is the old complete copy or absent, never partial."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from colo.aws import weight_sync
from colo.aws.weight_sync import COMPLETE_MARKER, main, retired_dir, staging_dir, sync
from tests.aws.conftest import BUCKET, put_model, record_gets, tiny_model_files

SOURCE = f"s3://{BUCKET}/qwen/"
CHUNK = 64 * 1024
# Big enough to arrive in several chunks, so a download can be cut in the middle.
WEIGHTS_V1 = bytes(range(256)) * (3 * CHUNK // 256 + 7)
WEIGHTS_V2 = WEIGHTS_V1[::-1] + b"longer"


class Killed(BaseException):
    """Stands for SIGKILL: no `except Exception` and no cleanup of the sync's own catches it."""


class Faults:
    """Counts every step that changes the disk (links, renames, state writes, rmtree, downloaded chunks)
    and kills the run at one of them."""

    def __init__(self) -> None:
        self.trace: list[str] = []
        self.kill_at: tuple[str, int] | None = None  # (step label, its n-th occurrence) ...
        self.kill_index: int | None = None  # ... or the n-th step of any kind

    def step(self, label: str) -> None:
        self.trace.append(label)
        occurrence = self.trace.count(label)
        if self.kill_at == (label, occurrence) or self.kill_index == len(self.trace):
            raise Killed(f"{label} #{occurrence}")

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.step(label)
            return function(*args, **kwargs)

        return wrapped


class CountingBody:
    def __init__(self, body: Any, faults: Faults) -> None:
        self.body, self.faults = body, faults

    def read(self, size: int = -1) -> bytes:
        self.faults.step("download chunk")
        data: bytes = self.body.read(size)
        return data


class FaultyS3:
    """The real (moto) client, with every downloaded chunk counted as a step."""

    def __init__(self, s3: Any, faults: Faults) -> None:
        self.s3, self.faults = s3, faults

    def __getattr__(self, name: str) -> Any:
        return getattr(self.s3, name)

    def get_object(self, **request: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.s3.get_object(**request)
        return {**answer, "Body": CountingBody(answer["Body"], self.faults)}


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    counter = Faults()
    fake_os = SimpleNamespace(
        **{name: getattr(weight_sync.os, name) for name in ("path", "fsync", "stat")},
        link=counter.wrap("link", weight_sync.os.link),
        replace=counter.wrap("replace", weight_sync.os.replace),
        rename=counter.wrap("rename", weight_sync.os.rename),
    )
    fake_shutil = SimpleNamespace(
        rmtree=counter.wrap("rmtree", shutil.rmtree), copy2=counter.wrap("copy", shutil.copy2)
    )
    monkeypatch.setattr(weight_sync, "os", fake_os)
    monkeypatch.setattr(weight_sync, "shutil", fake_shutil)
    monkeypatch.setattr(weight_sync, "_write_json", counter.wrap("state write", weight_sync._write_json))
    monkeypatch.setattr(weight_sync, "STREAM_CHUNK", CHUNK)
    return counter


def v1_files() -> dict[str, bytes]:
    return {**tiny_model_files(), "model-00003.safetensors": WEIGHTS_V1, "old-notes.txt": b"dropped in v2"}


def v2_files() -> dict[str, bytes]:
    files = {**v1_files(), "model-00003.safetensors": WEIGHTS_V2, "tokenizer.json": b'{"version": 2}'}
    del files["old-notes.txt"]
    return {**files, "original/notes.md": b"a new nested file"}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def quiet(_: str) -> None:
    pass


@pytest.fixture
def published_v1(s3: Any, tmp_path: Path) -> Path:
    """A complete v1 copy, made before S3 moves on to v2 (three files unchanged, two changed, one new, one
    gone)."""
    put_model(s3, "qwen/", v1_files())
    template = tmp_path / "template"
    sync(SOURCE, template, s3=s3, log=quiet)
    s3.delete_object(Bucket=BUCKET, Key="qwen/old-notes.txt")
    put_model(s3, "qwen/", {k: v for k, v in v2_files().items() if v1_files().get(k) != v})
    return template


def _fresh_target(template: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name / "llm"
    shutil.copytree(template, target)
    return target


def _assert_complete_or_absent(target: Path) -> None:
    """What a server could see while the update is interrupted."""
    if not target.exists():
        return
    files = tree(target)
    marker = json.loads(files.pop(COMPLETE_MARKER))
    assert files in (v1_files(), v2_files())
    assert set(marker["files"]) == set(files)


def _assert_next_run_publishes_v2(s3: Any, target: Path) -> None:
    sync(SOURCE, target, s3=s3, log=quiet)
    files = tree(target)
    marker = json.loads(files.pop(COMPLETE_MARKER))
    assert files == v2_files()
    assert set(marker["files"]) == set(v2_files())
    assert not staging_dir(target).exists()
    assert not retired_dir(target).exists()
    assert sync(SOURCE, target, s3=s3, log=quiet, verify=True).up_to_date  # every byte re-hashed


def _killed_run(s3: Any, target: Path, faults: Faults) -> str:
    faults.trace.clear()
    with pytest.raises(Killed) as killed:
        sync(SOURCE, target, s3=FaultyS3(s3, faults), log=quiet)
    return str(killed.value)


# (where the update is killed, the step and its occurrence); files are visited in name order: config.json,
# model-00001 and model-00002 are unchanged (linked), model-00003, original/notes.md and tokenizer.json changed
NAMED_POINTS = [
    ("before hard-linking unchanged files", ("link", 1)),
    ("while hard-linking unchanged files", ("link", 2)),
    ("between a link and its rename into place", ("replace", 2)),
    ("after hard-linking unchanged files", ("download chunk", 1)),
    ("during a download", ("download chunk", 2)),
    ("during the last download", ("download chunk", 7)),
    ("before publishing", ("rename", 1)),
    ("between the two renames of publishing", ("rename", 2)),
    ("after publishing, while removing the old copy", ("rmtree", 2)),
]


@pytest.mark.parametrize(("point", "step"), NAMED_POINTS, ids=[p for p, _ in NAMED_POINTS])
def test_an_update_killed_at_a_named_point_is_completed_by_the_next_run(
    s3: Any, published_v1: Path, tmp_path: Path, faults: Faults, point: str, step: tuple[str, int]
) -> None:
    target = _fresh_target(published_v1, tmp_path, "named")
    faults.kill_at = step
    assert _killed_run(s3, target, faults) == f"{step[0]} #{step[1]}", point
    _assert_complete_or_absent(target)
    faults.kill_at = None
    _assert_next_run_publishes_v2(s3, target)


def test_an_update_killed_at_any_step_is_completed_by_the_next_run(
    s3: Any, published_v1: Path, tmp_path: Path, faults: Faults
) -> None:
    faults.trace.clear()
    sync(SOURCE, _fresh_target(published_v1, tmp_path, "count"), s3=FaultyS3(s3, faults), log=quiet)
    steps = len(faults.trace)
    assert steps > 20
    for index in range(1, steps + 1):
        faults.kill_index = index
        target = _fresh_target(published_v1, tmp_path, f"kill-{index}")
        _killed_run(s3, target, faults)
        _assert_complete_or_absent(target)
        faults.kill_index = None
        _assert_next_run_publishes_v2(s3, target)


def test_a_run_killed_twice_in_a_row_still_completes(
    s3: Any, published_v1: Path, tmp_path: Path, faults: Faults
) -> None:
    target = _fresh_target(published_v1, tmp_path, "twice")
    faults.kill_at = ("download chunk", 2)
    _killed_run(s3, target, faults)
    faults.kill_at = ("download chunk", 1)
    _killed_run(s3, target, faults)
    faults.kill_at = None
    _assert_next_run_publishes_v2(s3, target)


@pytest.fixture
def published(s3: Any, tmp_path: Path) -> Path:
    put_model(s3, "qwen/", v1_files())
    target = tmp_path / "llm"
    sync(SOURCE, target, s3=s3, log=quiet)
    return target


def _damage_keeping_the_size(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_re_run_trusts_the_marker_and_reads_nothing(s3: Any, published: Path) -> None:
    _damage_keeping_the_size(published / "model-00003.safetensors")
    gets = record_gets(s3)
    assert sync(SOURCE, published, s3=s3, log=quiet).up_to_date
    assert gets == []


def test_verify_re_hashes_the_published_copy_and_fetches_a_damaged_file_again(
    s3: Any, published: Path
) -> None:
    _damage_keeping_the_size(published / "model-00003.safetensors")
    gets = record_gets(s3)
    result = sync(SOURCE, published, s3=s3, log=quiet, verify=True)
    assert result.downloaded == ("model-00003.safetensors",)
    assert [key for key, _ in gets] == ["qwen/model-00003.safetensors"]
    assert tree(published)["model-00003.safetensors"] == WEIGHTS_V1


def test_verify_on_the_command_line_re_hashes_an_intact_copy_and_keeps_it(
    s3: Any, published: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.stat().st_mtime_ns for p in published.rglob("*")}
    assert main([SOURCE, str(published), "--verify"]) == 0
    assert "re-hashed" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in published.rglob("*")} == before
