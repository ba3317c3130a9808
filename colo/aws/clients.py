"""The one place boto3 clients are made.

No endpoint is ever passed, so boto3's own configuration decides it: AWS_ENDPOINT_URL (or a
service-specific AWS_ENDPOINT_URL_<SERVICE>) points every client at a local S3 or an emulator. A stack's
aws:profile and aws:region are passed in, so colo's own calls act as the identity the AWS provider deploys
with, not whatever the environment holds.
"""

from __future__ import annotations

import functools
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.loaders import Loader, create_loader

RETRIES = Config(retries={"mode": "standard", "max_attempts": 5})
# S3 answers for every bucket from any region (boto3 follows the redirect); EC2 and EKS do not.
S3_FALLBACK_REGION = "us-east-1"


class RegionMissing(ValueError):
    pass


def client(service: str, region: str | None = None, profile: str | None = None) -> Any:
    """A boto3 client in `region`, else the environment's region (AWS_REGION, profile), with the
    credentials of `profile` (the stack's aws:profile), else the environment's."""
    session = _session(profile)
    chosen = region or session.region_name
    if chosen is None:
        if service != "s3":
            raise RegionMissing(
                f"no AWS region for {service}: set aws:region in the stack config, or AWS_REGION"
            )
        chosen = S3_FALLBACK_REGION
    return session.client(service, region_name=chosen, config=RETRIES)


@functools.cache
def _loader(data_path: str | None) -> Loader:
    return create_loader(data_path)


def _session(profile: str | None) -> boto3.session.Session:
    """A new session (credentials and config are read afresh) on the one data loader of its AWS_DATA_PATH.

    Each botocore session otherwise parses botocore's endpoint rules and every service model it uses from JSON
    again, about half a second of CPU a client; the loader keeps what it parsed, and those files never change
    while colo runs. boto3 adds its own data directory to the loader once per session: kept once here."""
    core = botocore.session.Session()
    loader = _loader(core.get_config_variable("data_path"))
    core.register_component("data_loader", loader)
    session = boto3.session.Session(botocore_session=core, profile_name=profile)
    paths = loader.search_paths
    if paths.count(paths[-1]) > 1:  # boto3's data directory, appended again
        paths.pop()
    return session
