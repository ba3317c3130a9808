"""boto3 code reaches whatever AWS_ENDPOINT_URL names: here a real HTTP S3 endpoint served by moto."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from colo.aws.clients import client
from colo.aws.s3_profile import read_s3_profile
from tests.aws.conftest import BUCKET, put_model, tiny_model_files


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def endpoint(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    try:
        yield url
    finally:
        server.stop()


def test_a_profile_is_read_over_http_from_the_endpoint_in_aws_endpoint_url(endpoint: str) -> None:
    s3 = client("s3")
    assert s3.meta.endpoint_url == endpoint
    s3.create_bucket(Bucket=BUCKET)
    put_model(s3, "tiny/", tiny_model_files())
    arch = read_s3_profile(f"s3://{BUCKET}/tiny/", "example/tiny")  # no client passed: the default one
    assert arch.num_layers == 2
    assert arch.checkpoint_bytes_by_part["mtp"] == 512
