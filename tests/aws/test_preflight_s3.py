"""`colo preflight` tells a missing bucket from a missing prefix, a prefix without config.json, and access
denied: a HEAD error has no body, so each is asked for by the call that can tell it apart."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from colo.aws.preflight import check_s3_prefix
from tests.aws.conftest import BUCKET, put_model, tiny_model_files

PATH = "colo:pairs[0].llm.weightsUri"


@pytest.fixture
def model(s3: Any) -> Any:
    put_model(s3, "qwen/", tiny_model_files())
    put_model(s3, "weights-only/", {"model.safetensors": b"123"})
    return s3


def deny(s3: Any, operation: str) -> None:
    """S3 answers `operation` with 403 and, as for any HEAD, no body: the code is only the status."""

    def forbidden(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        parsed = {
            "Error": {"Code": "403", "Message": "Forbidden"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }
        return AWSResponse(f"https://{BUCKET}.s3.amazonaws.com/", 403, {}, None), parsed

    s3.meta.events.register(f"before-call.s3.{operation}", forbidden)


def test_a_prefix_holding_config_json_passes(model: Any) -> None:
    check = check_s3_prefix(model, PATH, f"s3://{BUCKET}/qwen/")
    assert check.ok
    assert check.detail == f"s3://{BUCKET}/qwen/ holds config.json"


def test_a_missing_bucket_is_named_as_such(model: Any) -> None:
    check = check_s3_prefix(model, PATH, "s3://no-such-bucket/qwen/")
    assert not check.ok
    assert check.detail == "no bucket named no-such-bucket"
    assert "create the bucket" in check.fix


def test_a_missing_prefix_is_not_mistaken_for_a_missing_bucket(model: Any) -> None:
    check = check_s3_prefix(model, PATH, f"s3://{BUCKET}/not-uploaded/")
    assert not check.ok
    assert check.detail == f"s3://{BUCKET}/not-uploaded/: no objects under that prefix in bucket {BUCKET}"
    assert f"upload the model under s3://{BUCKET}/not-uploaded/" in check.fix


def test_a_prefix_without_config_json_says_what_it_lacks(model: Any) -> None:
    check = check_s3_prefix(model, PATH, f"s3://{BUCKET}/weights-only/")
    assert not check.ok
    assert "the prefix holds objects but no config.json" in check.detail


@pytest.mark.parametrize(
    ("operation", "detail", "permission"),
    [
        ("HeadBucket", f"access to bucket {BUCKET} denied", "s3:ListBucket"),
        ("ListObjectsV2", f"listing s3://{BUCKET}/qwen/ denied", "s3:ListBucket"),
        ("HeadObject", "reading it denied", "s3:GetObject"),
    ],
)
def test_access_denied_is_told_apart_and_names_the_missing_permission(
    model: Any, operation: str, detail: str, permission: str
) -> None:
    deny(model, operation)
    check = check_s3_prefix(model, PATH, f"s3://{BUCKET}/qwen/")
    assert not check.ok
    assert detail in check.detail
    assert permission in check.fix
    assert "no bucket" not in check.detail and "no objects" not in check.detail
