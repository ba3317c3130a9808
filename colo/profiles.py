"""Which reader a stack needs for its model profiles: boto3 is loaded only when a profile lives in S3."""

from __future__ import annotations

from colo.config import StackConfig
from colo.plan.pair import S3Profile
from colo.vllm import ModelArchitecture


def s3_profile_reader(config: StackConfig) -> S3Profile | None:
    servers = [s for p in config.pairs for _, s in p.servers()]
    if not any(s.profile and s.profile.startswith("s3://") for s in servers):
        return None
    from colo.aws.clients import client
    from colo.aws.s3_profile import read_s3_profile

    region, profile = config.aws_region, config.aws_profile

    def reader(uri: str, model_id: str) -> ModelArchitecture:
        # The stack's AWS identity (aws:profile, aws:region), as the AWS provider and the weight sync use.
        return read_s3_profile(uri, model_id, s3=client("s3", region, profile))

    return reader
