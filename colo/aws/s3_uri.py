"""s3://bucket/prefix/ addresses, split the same way everywhere."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class S3Prefix:
    bucket: str
    prefix: str  # empty, or ends with "/"

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def parse_s3_prefix(uri: str) -> S3Prefix:
    if not uri.startswith("s3://"):
        raise ValueError(f"'{uri}' is not an s3:// address")
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if not bucket:
        raise ValueError(f"'{uri}' names no bucket; write it like s3://bucket/models/qwen3-8b/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return S3Prefix(bucket, prefix)
