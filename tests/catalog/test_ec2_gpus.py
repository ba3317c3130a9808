"""colo's table of EC2 GPU names, checked against EC2's own answer for every instance type in the catalog."""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import Any

import pytest

from colo.catalog import gpu, instance_type, instance_type_names
from colo.catalog.ec2_gpus import ec2_gpu_name, gpu_name_label


@cache
def ec2_instance_types() -> dict[str, Any]:
    """DescribeInstanceTypes as moto records it (moto/ec2/resources/instance_types.json.gz)."""
    data = resources.files("moto.ec2").joinpath("resources/instance_types.json.gz").read_bytes()
    table: dict[str, Any] = json.loads(gzip.decompress(data))
    return table


@pytest.mark.parametrize("name", instance_type_names())
def test_the_ec2_gpu_name_of_every_catalog_instance_type_is_ec2s_own(name: str) -> None:
    known = instance_type(name)
    assert known is not None
    (reported,) = ec2_instance_types()[name]["GpuInfo"]["Gpus"]
    assert ec2_gpu_name(known.gpu) == reported["Name"]
    assert gpu(known.gpu).ec2_memory_mib == reported["MemoryInfo"]["SizeInMiB"]


def test_a_gpu_no_ec2_type_carries_has_no_ec2_name() -> None:
    assert ec2_gpu_name("A10") is None  # the A10 is not an EC2 GPU (g5 carries the A10G)


@pytest.mark.parametrize(
    ("ec2_name", "label"), [("L40S", "l40s"), ("T4", "t4"), ("RTX PRO Server 6000", "rtx-pro-server-6000")]
)
def test_karpenter_labels_a_gpu_name_lower_cased_with_blanks_as_dashes(ec2_name: str, label: str) -> None:
    assert gpu_name_label(ec2_name) == label
