"""The name EC2 gives a catalog GPU, and the node label value Karpenter makes of it (colo/catalog/ec2_gpus.yaml)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from colo.catalog.data import parse_yaml


@cache
def _names() -> dict[str, str]:
    text = resources.files("colo.catalog").joinpath("ec2_gpus.yaml").read_text()
    table: dict[str, str] = parse_yaml(text)["ec2_gpu_names"]
    return table


def ec2_gpu_name(catalog_gpu: str) -> str | None:
    """EC2's name for a catalog GPU (e.g. L40S, "RTX PRO Server 6000"); None for a GPU no EC2 type carries."""
    return _names().get(catalog_gpu)


def gpu_name_label(ec2_name: str) -> str:
    """The value of Karpenter's instance-gpu-name label for an EC2 GPU name: lower case, blanks as '-'
    (aws/karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go, lowerKabobCase)."""
    return ec2_name.replace(" ", "-").lower()
