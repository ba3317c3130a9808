from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from colo.aws.weight_sync import COMPLETE_MARKER, STAGING_STATE, main, staging_dir, sync
from tests.aws.conftest import BUCKET, MIB, put_model, put_multipart, record_gets, tiny_model_files

SOURCE = f"s3://{BUCKET}/qwen/"
# 12 MiB in 5 MiB parts: two full parts and a short last one, as any SDK uploads it
BIG = bytes(range(256)) * (12 * MIB // 256) + b"tail"


def quiet(_: str) -> None:
    pass


@pytest.fixture
def model(s3: Any) -> dict[str, bytes]:
    files = tiny_model_files()
    put_model(s3, "qwen/", files)
    put_multipart(s3, "qwen/model-etag.safetensors", BIG)  # ETag md5-of-md5s-3, no checksum
    put_multipart(s3, "qwen/model-sha.safetensors", BIG[::-1], sha256=True)  # composite SHA-256
    put_model(s3, "qwen/", {"original/readme.md": b"nested keys keep their folders"})
    return {
        **files,
        "model-etag.safetensors": BIG,
        "model-sha.safetensors": BIG[::-1],
        "original/readme.md": b"nested keys keep their folders",
    }


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_copies_every_object_including_multipart_ones_and_marks_the_copy_complete(
    s3: Any, model: dict[str, bytes], tmp_path: Path
) -> None:
    target = tmp_path / "models" / "chat" / "llm"
    result = sync(SOURCE, target, s3=s3, log=quiet)
    copied = tree(target)
    marker = json.loads(copied.pop(COMPLETE_MARKER))
    assert copied == model
    assert marker["source"] == SOURCE
    assert marker["files"]["model-etag.safetensors"]["etag"].endswith("-3")
    assert sorted(result.downloaded) == sorted(model)
    assert not staging_dir(target).exists()


def test_a_second_run_downloads_nothing(s3: Any, model: dict[str, bytes], tmp_path: Path) -> None:
    target = tmp_path / "llm"
    sync(SOURCE, target, s3=s3, log=quiet)
    before = {p: p.stat().st_mtime_ns for p in target.rglob("*")}
    gets = record_gets(s3)
    result = sync(SOURCE, target, s3=s3, log=quiet)
    assert result.up_to_date
    assert gets == []
    assert {p: p.stat().st_mtime_ns for p in target.rglob("*")} == before


def test_an_interrupted_download_resumes_where_it_stopped(
    s3: Any, model: dict[str, bytes], tmp_path: Path
) -> None:
    target = tmp_path / "llm"
    staging = staging_dir(target)
    staging.mkdir()
    etag = s3.head_object(Bucket=BUCKET, Key="qwen/model-etag.safetensors")["ETag"].strip('"')
    (staging / "model-etag.safetensors.part").write_bytes(BIG[: 7 * MIB])
    (staging / STAGING_STATE).write_text(
        json.dumps({"source": SOURCE, "partial": {"model-etag.safetensors": etag}})
    )
    gets = record_gets(s3)
    sync(SOURCE, target, s3=s3, log=quiet)
    assert ("qwen/model-etag.safetensors", f"bytes={7 * MIB}-") in gets
    assert (target / "model-etag.safetensors").read_bytes() == BIG


def test_a_partial_file_from_another_version_of_the_object_starts_over(
    s3: Any, model: dict[str, bytes], tmp_path: Path
) -> None:
    target = tmp_path / "llm"
    staging = staging_dir(target)
    staging.mkdir()
    (staging / "model-etag.safetensors.part").write_bytes(b"x" * MIB)
    (staging / STAGING_STATE).write_text(
        json.dumps({"source": SOURCE, "partial": {"model-etag.safetensors": "an-older-etag-2"}})
    )
    gets = record_gets(s3)
    sync(SOURCE, target, s3=s3, log=quiet)
    assert ("qwen/model-etag.safetensors", None) in gets
    assert (target / "model-etag.safetensors").read_bytes() == BIG


def test_corrupted_bytes_fail_verification_and_publish_nothing(
    s3: Any, model: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "llm"
    staging = staging_dir(target)
    staging.mkdir()
    etag = s3.head_object(Bucket=BUCKET, Key="qwen/model-sha.safetensors")["ETag"].strip('"')
    damaged = bytearray(BIG[::-1][: 6 * MIB])
    damaged[1234] ^= 0xFF  # one flipped bit in the part already on disk
    (staging / "model-sha.safetensors.part").write_bytes(bytes(damaged))
    (staging / STAGING_STATE).write_text(
        json.dumps({"source": SOURCE, "partial": {"model-sha.safetensors": etag}})
    )

    assert main([SOURCE, str(target)]) == 1
    err = capsys.readouterr().err
    assert "model-sha.safetensors failed verification (sha256-composite" in err
    assert "nothing was published" in err
    assert not target.exists()
    assert not (staging / "model-sha.safetensors.part").exists()

    assert main([SOURCE, str(target)]) == 0  # the damaged part was discarded, so a retry heals
    assert (target / "model-sha.safetensors").read_bytes() == BIG[::-1]


def test_a_missing_prefix_is_a_clear_failure(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([f"s3://{BUCKET}/no-such-model/", str(tmp_path / "llm")]) == 1
    assert "no objects under s3://models/no-such-model/" in capsys.readouterr().err
    assert not (tmp_path / "llm").exists()


def test_a_prefix_without_config_json_is_not_a_model(
    s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    put_model(s3, "weights-only/", {"model.safetensors": b"123"})
    assert main([f"s3://{BUCKET}/weights-only/", str(tmp_path / "llm")]) == 1
    assert "holds no config.json" in capsys.readouterr().err


def test_a_changed_object_is_the_only_one_fetched_and_the_copy_is_swapped_whole(
    s3: Any, model: dict[str, bytes], tmp_path: Path
) -> None:
    target = tmp_path / "llm"
    sync(SOURCE, target, s3=s3, log=quiet)
    (target / "stale-file").write_bytes(b"from an older upload")
    put_model(s3, "qwen/", {"tokenizer.json": b'{"version": 2}'})
    result = sync(SOURCE, target, s3=s3, log=quiet)
    assert result.downloaded == ("tokenizer.json",)
    assert (target / "tokenizer.json").read_bytes() == b'{"version": 2}'
    assert not (target / "stale-file").exists()
    assert (target / "model-etag.safetensors").read_bytes() == BIG
    assert not staging_dir(target).exists()


def test_a_damaged_local_file_under_a_valid_marker_is_fetched_again(
    s3: Any, model: dict[str, bytes], tmp_path: Path
) -> None:
    target = tmp_path / "llm"
    sync(SOURCE, target, s3=s3, log=quiet)
    with (target / "model-etag.safetensors").open("r+b") as handle:
        handle.truncate(MIB)
    result = sync(SOURCE, target, s3=s3, log=quiet)
    assert result.downloaded == ("model-etag.safetensors",)
    assert (target / "model-etag.safetensors").read_bytes() == BIG


def test_runs_as_a_module_entry_point(s3: Any, model: dict[str, bytes], tmp_path: Path) -> None:
    assert main([SOURCE, str(tmp_path / "llm")]) == 0
    assert (tmp_path / "llm" / COMPLETE_MARKER).is_file()
    assert os.access(tmp_path / "llm" / "config.json", os.R_OK)
