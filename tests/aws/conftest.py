"""Fixtures for the boto3 side: moto's AWS, and small model checkpoints shaped like real ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from colo.aws.clients import client as aws_client
from tests.model_files import TINY_CONFIG, safetensors_blob

REGION = "us-east-1"
BUCKET = "models"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    # moto's EC2 would otherwise build its 18,000 public AMIs for every account and region a test touches;
    # colo asks EC2 for no image.
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


@pytest.fixture
def s3(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        client = aws_client("s3", REGION)
        client.create_bucket(Bucket=BUCKET)
        yield client


def put_model(s3: Any, prefix: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}{name}", Body=data)


def tiny_model_files() -> dict[str, bytes]:
    return {
        "config.json": json.dumps(TINY_CONFIG).encode(),
        "model-00001-of-00002.safetensors": safetensors_blob(
            {"model.layers.0.mlp.weight": 4096, "lm_head.weight": 1024}
        ),
        "model-00002-of-00002.safetensors": safetensors_blob(
            {"model.layers.1.mlp.weight": 4096, "mtp.layers.0.weight": 512}
        ),
        "tokenizer.json": b"{}",
    }


MIB = 1024 * 1024


def put_multipart(s3: Any, key: str, data: bytes, part_size: int = 5 * MIB, *, sha256: bool = False) -> None:
    extra = {"ChecksumAlgorithm": "SHA256"} if sha256 else {}
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key, **extra)
    parts = []
    for number, start in enumerate(range(0, len(data), part_size), start=1):
        answer = s3.upload_part(
            Bucket=BUCKET,
            Key=key,
            UploadId=upload["UploadId"],
            PartNumber=number,
            Body=data[start : start + part_size],
            **extra,
        )
        part = {"PartNumber": number, "ETag": answer["ETag"]}
        if sha256:
            part["ChecksumSHA256"] = answer["ChecksumSHA256"]
        parts.append(part)
    s3.complete_multipart_upload(
        Bucket=BUCKET, Key=key, UploadId=upload["UploadId"], MultipartUpload={"Parts": parts}
    )


def record_gets(s3: Any) -> list[tuple[str, str | None]]:
    """(key, Range) of every GetObject the client makes from now on."""
    seen: list[tuple[str, str | None]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append((params["Key"], params.get("Range")))

    s3.meta.events.register("provide-client-params.s3.GetObject", record)
    return seen
