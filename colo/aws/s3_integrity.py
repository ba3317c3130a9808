"""What S3 promises about an object's bytes, and the same digest computed over a local file.

S3 offers two checks. A SHA-256 checksum, when the uploader asked for one: over the whole object for a
single PUT, or over the concatenated per-part digests for a multipart upload ("COMPOSITE", written
`<base64>-<parts>`). Otherwise the ETag: the MD5 of the object for a single PUT, or
`md5(md5(part 1) + ... + md5(part N))-N` for a multipart upload, which can be recomputed only with the
same part boundaries. An ETag of an SSE-KMS or SSE-C object is not an MD5 at all; then only the size
is checked, and the result says so.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from math import ceil
from pathlib import Path
from typing import Any

CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class Integrity:
    method: str  # "sha256", "sha256-composite", "md5", "md5-multipart" or "size"
    expected: str  # the digest S3 reports, normalised ("" for "size")
    size: int
    part_sizes: tuple[int, ...] = ()  # boundaries of a multipart upload

    @property
    def verifiable(self) -> bool:
        return self.method != "size"


def _parts_of(head: Callable[..., dict[str, Any]], size: int, parts: int) -> tuple[int, ...]:
    """Part sizes of a multipart object: uniform parts (what every SDK uploads) are confirmed with two
    HEADs; anything else is read part by part."""
    first = int(head(PartNumber=1)["ContentLength"])
    last = int(head(PartNumber=parts)["ContentLength"]) if parts > 1 else first
    if first > 0 and ceil(size / first) == parts and last == size - first * (parts - 1):
        return (*([first] * (parts - 1)), last)
    return tuple(int(head(PartNumber=n)["ContentLength"]) for n in range(1, parts + 1))


def remote_integrity(s3: Any, bucket: str, key: str) -> Integrity:
    def head(**extra: Any) -> dict[str, Any]:
        answer: dict[str, Any] = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED", **extra)
        return answer

    meta = head()
    size = int(meta["ContentLength"])
    etag = str(meta["ETag"]).strip('"')
    parts = int(etag.rsplit("-", 1)[1]) if "-" in etag else 1
    sha = meta.get("ChecksumSHA256")
    if sha:
        digest = str(sha).split("-", 1)[0]
        if meta.get("ChecksumType") == "COMPOSITE" or parts > 1:
            return Integrity("sha256-composite", digest, size, _parts_of(head, size, parts))
        return Integrity("sha256", digest, size)
    if meta.get("ServerSideEncryption") == "aws:kms" or meta.get("SSECustomerAlgorithm"):
        return Integrity("size", "", size)
    if parts > 1:
        return Integrity("md5-multipart", etag, size, _parts_of(head, size, parts))
    return Integrity("md5", etag, size)


def _chunks(path: Path, length: int | None = None) -> Iterator[bytes]:
    with path.open("rb") as handle:
        remaining = length
        while remaining is None or remaining > 0:
            block = handle.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not block:
                return
            if remaining is not None:
                remaining -= len(block)
            yield block


def _part_digests(path: Path, sizes: tuple[int, ...], algorithm: str) -> list[bytes]:
    digests = []
    with path.open("rb") as handle:
        for size in sizes:
            h = hashlib.new(algorithm, usedforsecurity=False)
            remaining = size
            while remaining > 0:
                block = handle.read(min(CHUNK, remaining))
                if not block:
                    break
                h.update(block)
                remaining -= len(block)
            digests.append(h.digest())
    return digests


def local_digest(path: Path, integrity: Integrity) -> str:
    """The digest of a local file computed the way S3 computed `integrity.expected`."""
    if not integrity.verifiable:  # S3 reports no checksum: the size is all there is to compare
        return ""
    method = integrity.method
    if method in ("sha256", "md5"):
        h = hashlib.new(method, usedforsecurity=False)
        for block in _chunks(path):
            h.update(block)
        return base64.b64encode(h.digest()).decode() if method == "sha256" else h.hexdigest()
    if method == "sha256-composite":
        combined = hashlib.sha256(b"".join(_part_digests(path, integrity.part_sizes, "sha256")))
        return base64.b64encode(combined.digest()).decode()
    parts = _part_digests(path, integrity.part_sizes, "md5")
    combined_md5 = hashlib.md5(b"".join(parts), usedforsecurity=False)
    return f"{combined_md5.hexdigest()}-{len(parts)}"


def mismatch(path: Path, integrity: Integrity) -> str | None:
    """None when the local file is what S3 holds; otherwise what differs."""
    actual_size = path.stat().st_size
    if actual_size != integrity.size:
        return f"size {actual_size} bytes, S3 holds {integrity.size}"
    actual = local_digest(path, integrity)
    if actual != integrity.expected:
        return f"{integrity.method} {actual}, S3 reports {integrity.expected}"
    return None
