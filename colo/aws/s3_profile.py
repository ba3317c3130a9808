"""A model's architecture from an S3 prefix: config.json, and exact weight bytes from safetensors headers.

Only ranged GETs touch the checkpoint: 8 bytes for each file's header length, then the header itself.
A 70 GB model costs a few hundred kilobytes of reads.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from colo.aws.clients import client
from colo.s3_uri import S3Prefix, parse_s3_prefix
from colo.vllm import (
    MAX_CONFIG_BYTES,
    ModelArchitecture,
    architecture_from_mapping,
    header_length,
    parse_config_json,
    parse_header,
    tensor_bytes_by_part,
)


class S3ProfileError(ValueError):
    pass


def _ranged(s3: Any, bucket: str, key: str, first: int, last: int) -> bytes:
    body: bytes = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={first}-{last}")["Body"].read()
    return body


def read_header(s3: Any, bucket: str, key: str) -> dict[str, Any]:
    prefix = _ranged(s3, bucket, key, 0, 7)
    length = header_length(prefix)
    return parse_header(prefix + _ranged(s3, bucket, key, 8, 8 + length - 1))


def safetensors_keys(s3: Any, where: S3Prefix) -> list[str]:
    """The checkpoint files directly under the prefix, as a local model directory would hold them."""
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=where.bucket, Prefix=where.prefix, Delimiter="/"
    ):
        keys += [o["Key"] for o in page.get("Contents", []) if o["Key"].endswith(".safetensors")]
    return sorted(keys)


def read_s3_profile(uri: str, model_id: str, *, s3: Any = None) -> ModelArchitecture:
    where = parse_s3_prefix(uri)
    s3 = s3 or client("s3")
    config_key = where.key("config.json")
    current = config_key
    try:
        # One byte more than the bound, so that a larger object is seen to be larger.
        head = _ranged(s3, where.bucket, config_key, 0, MAX_CONFIG_BYTES)
        raw = parse_config_json(head)
        headers = []
        for current in safetensors_keys(s3, where):
            headers.append(read_header(s3, where.bucket, current))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise S3ProfileError(
            f"s3://{where.bucket}/{current}: {error.get('Code', 'error')} ({error.get('Message', exc)})"
        ) from None
    except BotoCoreError as exc:
        raise S3ProfileError(f"{where}: {exc}") from None
    parts = tensor_bytes_by_part(headers)
    return architecture_from_mapping(raw, model_id, source=f"s3://{where.bucket}/{config_key}", parts=parts)
