"""Catalogs: GPUs, model architectures and vLLM memory rules, kept as data files with sources."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

GIB = 1024**3
MIB = 1024**2
DEFAULT_CUBLAS_MIB = 118  # measured on H200 (gpus.yaml); used where a GPU has no figure of its own


@dataclass(frozen=True)
class GpuSpec:
    name: str
    cuda_total_bytes: int
    context_bytes: int
    cublas_bytes: int
    ec2_memory_mib: int | None  # what EC2 reports per GPU; checked against the instance type at preview
    # CUDA compute capability (major, minor): vLLM picks kernels and quantized layouts by it (Marlin below
    # 8.9 for FP8, FlashMLA on 9.x, V1's minimum of 8.0 before 0.10.2).
    compute_capability: tuple[int, int]
    # Streaming multiprocessors: the Triton top-k/top-p sampler sizes a scratch buffer by it.
    sm_count: int


def _yaml(name: str) -> Any:
    return yaml.safe_load(resources.files("colo.catalog").joinpath(name).read_text())


@cache
def _gpus() -> dict[str, GpuSpec]:
    table: dict[str, GpuSpec] = {}
    for name, entry in _yaml("gpus.yaml")["gpus"].items():
        table[name] = GpuSpec(
            name=name,
            # vLLM prints round(bytes / 2**30, 2); a MiB figure, where known, is more precise.
            cuda_total_bytes=int(entry["cuda_total_mib"]) * MIB
            if "cuda_total_mib" in entry
            else round(float(entry["cuda_total_gib"]) * GIB),
            context_bytes=int(entry["context_mib"]) * MIB,
            cublas_bytes=int(entry.get("cublas_mib", DEFAULT_CUBLAS_MIB)) * MIB,
            ec2_memory_mib=entry.get("ec2_memory_mib"),
            compute_capability=_capability(str(entry["compute_capability"])),
            sm_count=int(entry["sm_count"]),
        )
    return table


def _capability(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def gpu_names() -> list[str]:
    return sorted(_gpus())


def gpu(name: str) -> GpuSpec:
    table = _gpus()
    if name not in table:
        raise KeyError(f"unknown GPU '{name}'; known: {', '.join(sorted(table))}")
    return table[name]


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: str
    gpus: int
    vcpus: int
    memory_mib: int


@cache
def _instance_types() -> dict[str, InstanceType]:
    return {
        name: InstanceType(name=name, **entry)
        for name, entry in _yaml("instance_types.yaml")["instance_types"].items()
    }


def instance_type(name: str) -> InstanceType | None:
    return _instance_types().get(name)
