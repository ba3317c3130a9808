"""A model's architecture from an S3 prefix: config.json, exact weight bytes from safetensors headers, and the files
vLLM reads beside config.json where the checkpoint has them (colo.vllm.checkpoint.files.SIDE_FILES: the quantization
blocks, sentence_bert_config.json, preprocessor_config.json, video_preprocessor_config.json; and the
sentence-transformers pooling: modules.json, the Pooling module's config.json), read as from a local model
directory, which is what the weight sync makes of the prefix and what vLLM then reads.

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

CONFIG_FILE = "config.json"


class S3ProfileError(ValueError):
    pass


def _ranged(s3: Any, bucket: str, key: str, first: int, last: int) -> bytes:
    body: bytes = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={first}-{last}")["Body"].read()
    return body


def read_header(s3: Any, bucket: str, key: str) -> dict[str, Any]:
    prefix = _ranged(s3, bucket, key, 0, 7)
    length = header_length(prefix)
    return parse_header(prefix + _ranged(s3, bucket, key, 8, 8 + length - 1))


def listed_names(s3: Any, where: S3Prefix) -> list[str]:
    """The names of the objects directly under the prefix, as a local model directory would hold its files."""
    names: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=where.bucket, Prefix=where.prefix, Delimiter="/"
    ):
        names += [o["Key"][len(where.prefix) :] for o in page.get("Contents", [])]
    return names


class _Prefix:
    """A model's files under an S3 prefix, by their names relative to it (as modules.json names them); `current`
    is the key last asked for, for an error's sentence.

    The listing says which files lie directly under the prefix, without a request. One in a folder below it (a
    Pooling module's config.json) is fetched, and a missing one (NoSuchKey) is simply absent, as it is from a
    checkpoint that has none; any other refusal is an error. Each small file is fetched once."""

    def __init__(self, s3: Any, where: S3Prefix) -> None:
        self.s3, self.where = s3, where
        self.current = where.key(CONFIG_FILE)
        self.listed: frozenset[str] = frozenset()
        self._bodies: dict[str, bytes | None] = {}

    def small(self, name: str) -> bytes:
        """A config-sized file's bytes, read to one byte over the bound so that a larger object is seen to be
        larger."""
        self.current = self.where.key(name)
        return _ranged(self.s3, self.where.bucket, self.current, 0, MAX_CONFIG_BYTES)

    def list_files(self) -> None:
        self.listed = frozenset(listed_names(self.s3, self.where))

    def headers(self) -> list[dict[str, Any]]:
        """The safetensors headers of the checkpoint files directly under the prefix."""
        headers = []
        for name in sorted(n for n in self.listed if n.endswith(".safetensors")):
            self.current = self.where.key(name)
            headers.append(read_header(self.s3, self.where.bucket, self.current))
        return headers

    def _body(self, name: str) -> bytes | None:
        if name not in self._bodies:
            try:
                self._bodies[name] = self.small(name)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchKey":
                    raise
                self._bodies[name] = None
        return self._bodies[name]

    def has(self, name: str) -> bool:
        return name in self.listed if "/" not in name else self._body(name) is not None

    def read(self, name: str) -> Any:
        try:
            return parse_config_json(self._body(name) or b"")
        except ValueError as exc:
            raise S3ProfileError(f"s3://{self.where.bucket}/{self.where.key(name)}: {exc}") from None


def read_s3_profile(uri: str, model_id: str, *, s3: Any = None) -> ModelArchitecture:
    where = parse_s3_prefix(uri)
    files = _Prefix(s3 or client("s3"), where)
    config_key = where.key(CONFIG_FILE)
    try:
        raw = parse_config_json(files.small(CONFIG_FILE))
        files.list_files()
        parts = tensor_bytes_by_part(files.headers())
        # the side files and the sentence-transformers pooling, where the checkpoint has them
        return architecture_from_mapping(
            raw, model_id, f"s3://{where.bucket}/{config_key}", parts, has=files.has, read=files.read
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise S3ProfileError(
            f"s3://{where.bucket}/{files.current}: {error.get('Code', 'error')} ({error.get('Message', exc)})"
        ) from None
    except BotoCoreError as exc:
        raise S3ProfileError(f"{where}: {exc}") from None
