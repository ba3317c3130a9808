"""CPU and memory of the servers, and whether the pods placed on a node fit what the instance offers.

Default requests per role live in colo.roles. The GPU is not the only thing a pod can fail to get: a pod whose requests exceed the node's allocatable CPU
or memory stays Pending forever. Native sidecars count towards the pod's requests like app containers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colo.catalog import InstanceType
from colo.errors import Problem
from colo.roles import Role

# Reserved on every node by the kubelet, the system and daemon sets (colo's device plugin among them):
# EKS reserves roughly 0.1 CPU and 0.5-1.5 GiB on these sizes; this stays on the safe side.
NODE_RESERVED_MILLICPU = 400
NODE_RESERVED_FRACTION_MEMORY = 0.10

_UNITS = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}


def millicpu(quantity: str) -> int:
    if quantity.endswith("m"):
        return int(quantity[:-1])
    return round(float(quantity) * 1000)


def memory_bytes(quantity: str) -> int:
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)", quantity)
    if match is None:
        raise ValueError(f"not a memory quantity: {quantity}")
    return int(match.group(1)) * _UNITS[match.group(2)]


def node_fit_problems(
    instance: InstanceType, pods: Sequence[tuple[str, Sequence[tuple[str, str, str]]]]
) -> list[Problem]:
    """`pods` is, per pair on one node, (config path of the pair, [(role, cpu, memory)])."""
    cpu_free = instance.vcpus * 1000 - NODE_RESERVED_MILLICPU
    memory_free = int(instance.memory_mib * 1024**2 * (1 - NODE_RESERVED_FRACTION_MEMORY))
    cpu = sum(millicpu(c) for _, servers in pods for _, c, _ in servers)
    memory = sum(memory_bytes(m) for _, servers in pods for _, _, m in servers)
    problems = []
    first_path = pods[0][0]
    if cpu > cpu_free:
        problems.append(
            Problem(
                f"{first_path}.{Role.LLM}.cpu",
                f"the pairs on one {instance.name} node request {cpu / 1000:g} CPUs, more than the "
                f"~{cpu_free / 1000:g} it can allocate, so the pod would stay Pending; lower the servers' cpu, or "
                f"choose a larger instance type",
            )
        )
    if memory > memory_free:
        problems.append(
            Problem(
                f"{first_path}.{Role.LLM}.memory",
                f"the pairs on one {instance.name} node request {memory / 1024**3:.0f} GiB of memory, more "
                f"than the ~{memory_free / 1024**3:.0f} GiB it can allocate, so the pod would stay Pending; "
                f"lower the servers' memory, or choose a larger instance type",
            )
        )
    return problems
