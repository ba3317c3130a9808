from __future__ import annotations

from pathlib import Path
from typing import Any

from colo.aws.s3_integrity import mismatch, remote_integrity
from tests.aws.conftest import BUCKET, MIB, put_model, put_multipart

DATA = bytes(range(251)) * (11 * MIB // 251)


def test_each_upload_kind_is_checked_the_way_s3_computed_its_digest(s3: Any, tmp_path: Path) -> None:
    put_model(s3, "", {"single": DATA})
    put_multipart(s3, "etag-multipart", DATA)
    put_multipart(s3, "sha-multipart", DATA, sha256=True)
    local = tmp_path / "copy"
    local.write_bytes(DATA)
    for key, method in [
        ("single", "md5"),
        ("etag-multipart", "md5-multipart"),
        ("sha-multipart", "sha256-composite"),
    ]:
        integrity = remote_integrity(s3, BUCKET, key)
        assert integrity.method == method
        assert mismatch(local, integrity) is None, key


def test_multipart_part_boundaries_follow_the_upload(s3: Any) -> None:
    put_multipart(s3, "etag-multipart", DATA)
    assert remote_integrity(s3, BUCKET, "etag-multipart").part_sizes == (
        5 * MIB,
        5 * MIB,
        len(DATA) - 10 * MIB,
    )


def test_a_flipped_byte_or_a_short_file_is_a_mismatch(s3: Any, tmp_path: Path) -> None:
    put_multipart(s3, "etag-multipart", DATA)
    integrity = remote_integrity(s3, BUCKET, "etag-multipart")
    flipped = bytearray(DATA)
    flipped[-1] ^= 1
    local = tmp_path / "copy"
    local.write_bytes(bytes(flipped))
    assert "md5-multipart" in (mismatch(local, integrity) or "")
    local.write_bytes(DATA[:-1])
    assert "size" in (mismatch(local, integrity) or "")
