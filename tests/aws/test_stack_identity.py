"""colo's own AWS calls act as the stack's AWS identity (aws:profile, aws:region), as the AWS provider does;
preflight checks that a stack's kubeconfig context reaches the API server the stack names."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from colo.aws.clients import client
from colo.aws.preflight import check_kubernetes_context
from colo.config import parse_stack_config
from colo.profiles import s3_profile_reader
from colo.stackfiles import load_stack
from tests.aws.conftest import BUCKET, REGION, put_model, tiny_model_files


def profiles_file(path: Path, **profiles: str) -> Path:
    """An AWS config file whose profiles (name -> region) carry static test keys."""
    text = "".join(
        f"[profile {name}]\nregion = {region}\naws_access_key_id = testing\naws_secret_access_key = testing\n"
        for name, region in profiles.items()
    )
    path.write_text(text)
    return path


def test_a_client_takes_the_stacks_profile_and_its_region(
    aws_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(profiles_file(tmp_path / "config", team="eu-west-1")))
    monkeypatch.delenv("AWS_DEFAULT_REGION")  # the environment's region would outrank the profile's
    assert client("ec2", profile="team").meta.region_name == "eu-west-1"
    assert client("ec2", "us-west-2", "team").meta.region_name == "us-west-2"


def test_a_profile_the_machine_lacks_is_an_error_rather_than_the_ambient_identity(aws_env: None) -> None:
    from botocore.exceptions import ProfileNotFound

    with pytest.raises(ProfileNotFound, match="nobody"):
        client("s3", REGION, "nobody")


def test_plan_time_s3_profiles_are_read_as_the_stacks_profile(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(profiles_file(tmp_path / "config", team=REGION)))
    put_model(s3, "tiny/", tiny_model_files())
    raw = copy.deepcopy(load_stack("local").values)
    raw["pairs"][0]["llm"]["profile"] = f"s3://{BUCKET}/tiny/"
    read = s3_profile_reader(parse_stack_config(raw, aws_profile="team"))
    assert read is not None
    assert read(f"s3://{BUCKET}/tiny/", "tiny").checkpoint_bytes
    missing = s3_profile_reader(parse_stack_config(raw, aws_profile="nobody"))
    assert missing is not None
    with pytest.raises(Exception, match="nobody"):
        missing(f"s3://{BUCKET}/tiny/", "tiny")


def local_config(kubeconfig: Path, server: str) -> Any:
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": "kind-colo", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {}}],
            }
        )
    )
    raw = copy.deepcopy(load_stack("local").values)
    raw["cluster"]["kubeconfig"] = str(kubeconfig)
    return parse_stack_config(raw)


def test_preflight_confirms_the_context_reaches_the_stacks_api_server(tmp_path: Path) -> None:
    (check,) = check_kubernetes_context(local_config(tmp_path / "kubeconfig", "https://127.0.0.1:6443"))
    assert check.ok
    assert check.detail == "kind-colo reaches https://127.0.0.1:6443, the stack's API server"


def test_preflight_fails_a_context_that_reaches_another_server_with_the_key_to_fix(tmp_path: Path) -> None:
    (check,) = check_kubernetes_context(local_config(tmp_path / "kubeconfig", "https://10.1.1.1"))
    assert not check.ok
    assert check.fix == "fix colo:cluster.apiServer"
    assert "reaches https://10.1.1.1" in check.detail


def test_preflight_of_a_managed_stack_leaves_the_cluster_to_the_eks_check() -> None:
    assert check_kubernetes_context(parse_stack_config(load_stack("prod").values)) == []
