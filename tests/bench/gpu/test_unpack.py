"""The wheel set arrives in parts over several calls: joined and extracted only when every sha256 agrees."""

from __future__ import annotations

import hashlib
import io
import json
import random
import tarfile
from pathlib import Path
from typing import Any

import pytest

from bench.gpu.harness.unpack import UnpackError, main, unpack
from bench.gpu.prepare_wheelset import split

NOISE = random.Random(0).randbytes(100_000)  # incompressible, so the archive really has several parts


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _archive(tmp_path: Path, files: dict[str, bytes]) -> Path:
    path = tmp_path / "core.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _manifest(archive: Path, parts: list[Path]) -> dict[str, Any]:
    entry = {
        "file": archive.name,
        "sha256": _sha(archive.read_bytes()),
        "parts": [{"file": p.name, "sha256": _sha(p.read_bytes())} for p in parts],
    }
    return {"archives": {"core": entry}}


def test_parts_are_joined_checked_and_extracted(tmp_path: Path) -> None:
    archive = _archive(tmp_path, {"vllm/__init__.py": b"x = 1\n", "vllm/_C.abi3.so": NOISE})
    parts = split(archive, 20000)
    assert len(parts) > 1 and all(p.stat().st_size <= 20000 for p in parts)
    manifest = _manifest(archive, parts)
    archive.unlink()
    counts = unpack(manifest, tmp_path, tmp_path / "site", ["core"])
    assert counts == {"core": 2}
    assert (tmp_path / "site" / "vllm" / "_C.abi3.so").read_bytes() == NOISE


def test_a_corrupted_part_is_refused_before_anything_is_extracted(tmp_path: Path) -> None:
    archive = _archive(tmp_path, {"a.py": NOISE})
    parts = split(archive, 40000)
    manifest = _manifest(archive, parts)
    parts[-1].write_bytes(parts[-1].read_bytes()[:-1] + b"\0")
    with pytest.raises(UnpackError, match=parts[-1].name):
        unpack(manifest, tmp_path, tmp_path / "site", ["core"])
    assert not (tmp_path / "site").exists()


def test_a_part_not_yet_arrived_is_named_and_the_command_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _archive(tmp_path, {"a.py": NOISE})
    parts = split(archive, 40000)
    manifest_path = tmp_path / "manifest.json"
    manifest_path.write_text(json.dumps(_manifest(archive, parts)))
    parts[1].unlink()
    assert main([str(manifest_path), str(tmp_path), str(tmp_path / "site"), "core"]) == 1
    assert parts[1].name in capsys.readouterr().err


def test_a_member_outside_the_target_is_refused(tmp_path: Path) -> None:
    archive = _archive(tmp_path, {"../escape.py": b"x"})
    manifest = _manifest(archive, split(archive, 1 << 20))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack(manifest, tmp_path, tmp_path / "site", ["core"])
    assert not (tmp_path / "escape.py").exists()
