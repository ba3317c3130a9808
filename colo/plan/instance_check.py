"""Does the instance type really carry the GPU the budget was computed for?

The plan sizes every process against a GPU from colo's catalog. EC2 is the authority on what an instance
type carries, so the program (at preview, through the provider) and `colo preflight` (through boto3) ask
it, and both hand its answer to the one comparison below.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo.catalog import GpuSpec, gpu_candidates
from colo.errors import Problem


@dataclass(frozen=True)
class ReportedGpus:
    """What EC2 says about one instance type's GPUs (DescribeInstanceTypes GpuInfo)."""

    instance_type: str
    name: str | None  # e.g. "L40S", "A100"; None when the type has no GPU
    count: int
    memory_mib: int | None  # per GPU, as EC2 reports it (MiB)


def _same_model(gpu: GpuSpec, ec2_name: str) -> bool:
    # EC2 names the chip ("A100", "H100"), which may stand for several catalog entries (40 or 80 GB; PCIe
    # or SXM): any of them matches, and the memory comparison tells the sizes apart. A GPU given by its
    # memory alone has no catalog name to compare.
    return not gpu.from_catalog or gpu.name in gpu_candidates(ec2_name)


def gpu_mismatch_problems(gpu: GpuSpec, gpus_per_node: int, reported: ReportedGpus) -> list[Problem]:
    """Every way EC2's answer disagrees with the GPU and count the plan used; empty when they agree."""
    itype = reported.instance_type
    if reported.name is None or reported.count == 0:
        return [
            Problem(
                "colo:nodePool.instanceType",
                f"EC2 reports no whole GPU on {itype}; choose a GPU instance type (e.g. g6e.xlarge for one "
                f"L40S)",
            )
        ]
    problems: list[Problem] = []
    if not _same_model(gpu, reported.name):
        problems.append(
            Problem(
                "colo:nodePool.gpu",
                f"{itype} carries {reported.name} GPUs according to EC2, but the budget was computed for "
                f"{gpu.name}; set nodePool.gpu to the catalog entry for {reported.name}, or choose an "
                f"instance type with {gpu.name} GPUs",
            )
        )
    if reported.count != gpus_per_node:
        problems.append(
            Problem(
                "colo:nodePool.instanceType",
                f"{itype} has {reported.count} GPUs according to EC2, but the placement assumed "
                f"{gpus_per_node} per node; fix nodePool.gpusPerNode or choose another instance type",
            )
        )
    expected = gpu.ec2_memory_mib
    if expected is not None and reported.memory_mib is not None and reported.memory_mib != expected:
        problems.append(
            Problem(
                "colo:nodePool.gpu",
                f"{itype}'s GPUs have {reported.memory_mib} MiB according to EC2, but colo's catalog entry "
                f"{gpu.name} (which the budget used) has {expected} MiB; set nodePool.gpu to the GPU "
                f"{itype} really has, or choose another colo:nodePool.instanceType",
            )
        )
    return problems
