"""The one place boto3 clients are made.

No endpoint is ever passed, so boto3's own configuration decides it: AWS_ENDPOINT_URL (or a
service-specific AWS_ENDPOINT_URL_<SERVICE>) points every client at a local S3 or an emulator. A stack's
aws:profile and aws:region are passed in, so colo's own calls act as the identity the AWS provider deploys
with, not whatever the environment holds.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

RETRIES = Config(retries={"mode": "standard", "max_attempts": 5})
# S3 answers for every bucket from any region (boto3 follows the redirect); EC2 and EKS do not.
S3_FALLBACK_REGION = "us-east-1"


class RegionMissing(ValueError):
    pass


def client(service: str, region: str | None = None, profile: str | None = None) -> Any:
    """A boto3 client in `region`, else the environment's region (AWS_REGION, profile), with the
    credentials of `profile` (the stack's aws:profile), else the environment's."""
    session = boto3.session.Session(profile_name=profile)
    chosen = region or session.region_name
    if chosen is None:
        if service != "s3":
            raise RegionMissing(
                f"no AWS region for {service}: set aws:region in the stack config, or AWS_REGION"
            )
        chosen = S3_FALLBACK_REGION
    return session.client(service, region_name=chosen, config=RETRIES)
