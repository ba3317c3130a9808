"""Catalogs: GPUs, instance types, prices and model configs, kept as data files with a source for every number."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from colo.catalog.data import parse_yaml
from colo.catalog.gpus import (
    GpuLookupError,
    GpuSpec,
    gpu,
    gpu_aliases,
    gpu_by_memory,
    gpu_candidates,
    gpu_names,
    parse_capability,
    resolve_gpu,
)
from colo.catalog.units import GIB, MIB

__all__ = [
    "GIB",
    "MIB",
    "GpuLookupError",
    "GpuSpec",
    "InstanceType",
    "gpu",
    "gpu_aliases",
    "gpu_by_memory",
    "gpu_candidates",
    "gpu_names",
    "instance_type",
    "instance_type_names",
    "parse_capability",
    "resolve_gpu",
]


def _yaml(name: str) -> Any:
    return parse_yaml(resources.files("colo.catalog").joinpath(name).read_text())


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: str  # a catalog GPU name: instance_types.yaml may write any alias, the lookup resolves it
    gpus: int
    vcpus: int
    memory_mib: int
    # every GPU one NVLink hop from every other through NVSwitch (HGX boards); False: PCIe between GPUs
    nvswitch: bool = False


@cache
def _instance_types() -> dict[str, InstanceType]:
    table: dict[str, InstanceType] = {}
    for name, entry in _yaml("instance_types.yaml")["instance_types"].items():
        table[name] = InstanceType(name=name, **{**entry, "gpu": gpu(str(entry["gpu"])).name})
    return table


def instance_type(name: str) -> InstanceType | None:
    return _instance_types().get(name)


def instance_type_names() -> list[str]:
    return sorted(_instance_types())
