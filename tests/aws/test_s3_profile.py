from __future__ import annotations

from typing import Any

import pytest

from colo.aws.s3_profile import S3ProfileError, read_s3_profile
from tests.aws.conftest import BUCKET, put_model, record_gets, safetensors_blob, tiny_model_files


def test_weight_bytes_per_part_come_from_the_headers(s3: Any) -> None:
    put_model(s3, "tiny/", tiny_model_files())
    arch = read_s3_profile(f"s3://{BUCKET}/tiny/", "org/tiny", s3=s3)
    assert arch.checkpoint_bytes_by_part == {"model": 8192, "lm_head": 1024, "mtp": 512}
    assert arch.checkpoint_bytes == 8192 + 1024 + 512
    assert arch.hidden_size == 64
    assert arch.model_id == "org/tiny"


def test_only_the_header_bytes_of_a_checkpoint_are_read(s3: Any) -> None:
    files = tiny_model_files()
    files["model-00001-of-00002.safetensors"] = safetensors_blob({"model.w": 16}, pad_to=6 * 1024 * 1024)
    put_model(s3, "tiny/", files)
    gets = record_gets(s3)
    read_s3_profile(f"s3://{BUCKET}/tiny", "org/tiny", s3=s3)
    checkpoint_reads = [(key, rng) for key, rng in gets if key.endswith(".safetensors")]
    assert len(checkpoint_reads) == 4  # two files: the 8-byte length, then the header
    assert all(rng is not None and rng.startswith("bytes=") for _, rng in checkpoint_reads)
    assert ("tiny/model-00001-of-00002.safetensors", "bytes=0-7") in checkpoint_reads
    assert [key for key, _ in gets if not key.endswith(".safetensors")] == ["tiny/config.json"]


def test_a_prefix_without_checkpoints_still_gives_the_geometry(s3: Any) -> None:
    put_model(s3, "cfg-only/", {"config.json": tiny_model_files()["config.json"]})
    arch = read_s3_profile(f"s3://{BUCKET}/cfg-only/", "org/tiny", s3=s3)
    assert arch.checkpoint_bytes is None
    assert arch.num_layers == 2


def test_a_missing_config_names_the_object_it_looked_for(s3: Any) -> None:
    with pytest.raises(S3ProfileError, match=r"s3://models/absent/config.json: NoSuchKey"):
        read_s3_profile(f"s3://{BUCKET}/absent/", "org/tiny", s3=s3)


def test_a_profile_read_error_reaches_the_plan_as_a_problem_on_the_profile_path(s3: Any) -> None:
    from colo.cli.common import load_config
    from colo.plan.stack import make_plan
    from colo.stackfiles import load_stack

    config = load_config(load_stack("local"))
    pair = config.pairs[0]
    llm = pair.llm.model_copy(update={"profile": f"s3://{BUCKET}/absent/"})
    config = config.model_copy(update={"pairs": [pair.model_copy(update={"llm": llm})]})
    plan = make_plan(config, s3_profile=lambda uri, model: read_s3_profile(uri, model, s3=s3))
    assert [p.path for p in plan.problems] == ["colo:pairs[0].llm.profile"]
    assert "NoSuchKey" in plan.problems[0].message


def test_the_default_client_honours_aws_endpoint_url(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from colo.aws.clients import client

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5999")
    assert client("s3").meta.endpoint_url == "http://127.0.0.1:5999"
    assert client("ec2", "eu-west-1").meta.region_name == "eu-west-1"


def test_ec2_without_any_region_is_refused_with_the_setting_to_fix(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from colo.aws.clients import RegionMissing, client

    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(RegionMissing, match="aws:region"):
        client("ec2")
    assert client("s3").meta.region_name == "us-east-1"
