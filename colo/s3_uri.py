"""s3://bucket/prefix/ addresses, checked and split the same way everywhere (standard library only: the
weight-sync image imports this)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from colo.echo import shown

# Amazon S3 general purpose bucket naming rules
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IPV4 = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")
_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
# Prefix segments in S3's "safe characters" for object keys
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
_KEY_SEGMENT = re.compile(r"[A-Za-z0-9!_.*'()=+,-]+")
MAX_KEY_BYTES = 1024


@dataclass(frozen=True)
class S3Prefix:
    bucket: str
    prefix: str  # empty, or ends with "/"

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def bucket_problem(bucket: str) -> str | None:
    if (
        not _BUCKET.fullmatch(bucket)
        or ".." in bucket
        or _IPV4.fullmatch(bucket)
        or bucket.startswith(_RESERVED_PREFIXES)
        or bucket.endswith(_RESERVED_SUFFIXES)
    ):
        return (
            f"'{shown(bucket)}' is not a valid S3 bucket name: 3 to 63 lower-case letters, digits, '.' and "
            "'-', starting and ending with a letter or digit"
        )
    return None


def s3_prefix_problem(uri: str) -> str | None:
    """Why `uri` is not an `s3://bucket/prefix/` address colo reads from; None when it is."""
    if not uri.startswith("s3://"):
        return f"'{shown(uri)}' is not an s3:// address; write it like s3://bucket/models/qwen3-8b/"
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if "@" in bucket or ":" in bucket:
        return f"'{shown(uri)}' carries credentials or a port; S3 is read with the pod's own AWS identity"
    if not bucket:
        return f"'{shown(uri)}' names no bucket; write it like s3://bucket/models/qwen3-8b/"
    problem = bucket_problem(bucket)
    if problem:
        return problem
    if len(prefix.encode()) > MAX_KEY_BYTES:
        return f"'{shown(uri)}' has a prefix longer than S3's {MAX_KEY_BYTES}-byte keys"
    for segment in prefix.removesuffix("/").split("/") if prefix else []:
        if segment in ("", ".", ".."):
            return f"'{shown(uri)}' has an empty, '.' or '..' segment in its prefix; write the prefix plainly"
        if not _KEY_SEGMENT.fullmatch(segment):
            return (
                f"'{shown(uri)}' has characters in its prefix that S3 keys need escaped; use letters, digits "
                "and !_.*'()=+,-"
            )
    return None


def parse_s3_prefix(uri: str) -> S3Prefix:
    problem = s3_prefix_problem(uri)
    if problem:
        raise ValueError(problem)
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return S3Prefix(bucket, prefix)
