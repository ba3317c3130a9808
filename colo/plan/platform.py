"""Checks that a GPU-pairing method works on the chosen platform, before anything is deployed."""

from __future__ import annotations

from colo.catalog import GpuLookupError, InstanceType, gpu, instance_type
from colo.config.schema import StackConfig
from colo.errors import Problem

DRA_MIN_MINOR = 34  # resource.k8s.io/v1 is GA from Kubernetes 1.34
NATIVE_SIDECAR_MIN_MINOR = 29  # restartable init containers are on by default from 1.29
# EKS AMI type per node image. The other images (GPU Operator with CDI, a generic NVIDIA runtime) are
# nodes someone else builds; colo selects them with mode: existing.
AMI_TYPES = {
    "al2023-nvidia": "AL2023_x86_64_NVIDIA",
    "bottlerocket-nvidia": "BOTTLEROCKET_x86_64_NVIDIA",
}
ENVVAR_HONOURED = {
    "al2023-nvidia",
    "generic-nvidia-runtime",
}  # images whose runtime accepts NVIDIA_VISIBLE_DEVICES


def instance_type_known(config: StackConfig) -> bool:
    """colo creates the nodes (managed), or the user named the instance type of the nodes they have."""
    pool = config.node_pool
    return pool.mode == "managed" or "instance_type" in pool.model_fields_set


def _time_slice_gpus_problem(config: StackConfig, gpus: int) -> Problem:
    """Time-slice on nodes of several GPUs, at the setting the count came from: a pool that names no instance type
    has none to blame."""
    pool = config.node_pool
    stated = pool.gpus_per_node is not None
    where = f"the pool gives {gpus} per node" if stated else f"{pool.instance_type} has {gpus}"
    return Problem(
        "colo:nodePool.gpusPerNode" if stated else "colo:nodePool.instanceType",
        f"time-slice pairs two containers on one GPU only when the node has exactly one GPU; {where}, so the two "
        f"replicas may land on different GPUs. Use a single-GPU instance type (e.g. g6e.xlarge), or gpuPairing dra "
        f"or uuid-handoff",
    )


def gpus_per_node(config: StackConfig) -> int | None:
    pool = config.node_pool
    if pool.gpus_per_node is not None:
        return pool.gpus_per_node
    known = instance_type(pool.instance_type)
    return known.gpus if known else None


def platform_problems(config: StackConfig) -> list[Problem]:
    cluster, pool = config.cluster, config.node_pool
    problems: list[Problem] = []
    method = cluster.gpu_pairing
    if method == "uuid-handoff" and cluster.node_image not in ENVVAR_HONOURED:
        problems.append(
            Problem(
                "colo:cluster.gpuPairing",
                f"uuid-handoff needs a container runtime that honours NVIDIA_VISIBLE_DEVICES in unprivileged "
                f"containers; {cluster.node_image} does not (Bottlerocket defaults to volume-mounts with the env var "
                f"ignored; GPU Operator >= 25.10 injects devices through CDI). Use gpuPairing: dra (Kubernetes "
                f">= 1.34 with NVIDIA's DRA driver) or time-slice (single-GPU instance types)",
            )
        )
    if method == "dra" and cluster.minor < DRA_MIN_MINOR:
        problems.append(
            Problem(
                "colo:cluster.kubernetesVersion",
                f"gpuPairing dra needs resource.k8s.io/v1, GA from Kubernetes 1.{DRA_MIN_MINOR}; the cluster is "
                f"{cluster.kubernetes_version}. Upgrade the cluster, or use time-slice or uuid-handoff",
            )
        )
    problems += group_pairing_problems(config)
    if method == "time-slice":
        gpus = gpus_per_node(config)
        if gpus is None:
            problems.append(
                Problem(
                    "colo:nodePool.gpusPerNode",
                    f"time-slice needs to know the GPUs per node and {pool.instance_type} is not in colo's catalog; "
                    f"set nodePool.gpusPerNode",
                )
            )
        elif gpus != 1:
            problems.append(_time_slice_gpus_problem(config, gpus))
    native = cluster.native_sidecars
    if native and cluster.minor < NATIVE_SIDECAR_MIN_MINOR:
        problems.append(
            Problem(
                "colo:cluster.nativeSidecars",
                f"restartable init containers need Kubernetes >= 1.{NATIVE_SIDECAR_MIN_MINOR}; the cluster is "
                f"{cluster.kubernetes_version}. Drop the setting to use colo's health-wait start instead",
            )
        )
    known = instance_type(pool.instance_type) if instance_type_known(config) else None
    if known is not None:
        problems += _instance_gpu_problems(config, known)
    if pool.mode == "managed" and cluster.node_image not in AMI_TYPES:
        problems.append(
            Problem(
                "colo:cluster.nodeImage",
                f"colo manages EKS node groups only with {' or '.join(AMI_TYPES)}; {cluster.node_image} nodes are "
                f"built elsewhere, so set nodePool.mode: existing and nodePool.nodeSelector to select them",
            )
        )
    return problems


def _instance_gpu_problems(config: StackConfig, known: InstanceType) -> list[Problem]:
    """The GPU the stack names must be the one the instance type carries (names compared through the
    catalog lookup, so "NVIDIA L40S" and "L40S" agree)."""
    pool = config.node_pool
    if pool.named_gpu is None:
        return [
            Problem(
                "colo:nodePool.gpuMemoryMiB",
                f"{pool.instance_type} carries {known.gpu} GPUs, which colo's catalog knows; set nodePool.gpu: "
                f"{known.gpu} (gpuMemoryMiB alone is for GPUs the catalog lacks)",
            )
        ]
    try:
        named = gpu(pool.named_gpu).name
    except GpuLookupError:
        if pool.gpu_memory_mib is None:
            return []  # the plan reports the unknown name itself
        return [
            Problem(
                "colo:nodePool.gpu",
                f"{pool.instance_type} carries {known.gpu} GPUs, which colo's catalog knows, not "
                f"'{pool.named_gpu}'; a GPU described by its memory is for nodes colo has no instance type "
                f"for. Set nodePool.gpu: {known.gpu} (and drop gpuMemoryMiB and gpuComputeCapability), or "
                f"choose another instance type",
            )
        ]
    if named == known.gpu:
        return []
    return [
        Problem(
            "colo:nodePool.gpu",
            f"{pool.instance_type} carries {known.gpu} GPUs, not {named}; the budget must use the GPU the nodes "
            f"really have. Set nodePool.gpu: {known.gpu}, or choose another instance type",
        )
    ]


def uses_native_sidecars(config: StackConfig) -> bool:
    cluster = config.cluster
    if cluster.native_sidecars is not None:
        return cluster.native_sidecars
    return cluster.minor >= NATIVE_SIDECAR_MIN_MINOR


def group_pairing_problems(config: StackConfig) -> list[Problem]:
    """Time-slicing cannot give a tensor-parallel LLM its GPUs, nor say which of them a companion shares; MPS is
    planned for one GPU shared by a pair's servers, not for a group."""
    groups = [pair.name for pair in config.pairs if pair.tensor_parallel_size > 1]
    if not groups:
        return []
    problems: list[Problem] = []
    if config.cluster.compute_sharing == "mps":
        problems.append(
            Problem(
                "colo:cluster.computeSharing",
                f"mps is planned for a pair on one GPU, whose servers share one MPS server; colo has not planned "
                f"MPS over a tensor-parallel group (pairs {', '.join(groups)}: an MPS server on every GPU of the "
                f"group, the ranks' NCCL traffic as MPS clients). Use computeSharing time-slice for these pairs' "
                f"stack, or run the LLM on one GPU",
            )
        )
    if config.cluster.gpu_pairing != "time-slice":
        return problems
    return [
        *problems,
        Problem(
            "colo:cluster.gpuPairing",
            f"time-slice cannot place a tensor-parallel LLM (pairs {', '.join(groups)}): the device plugin hands "
            f"each container slices of whichever GPU it picks, so a pod can neither ask for N distinct GPUs for "
            f"the ranks nor say which of them a companion shares, and time-slice runs on single-GPU nodes only. "
            f"Use gpuPairing dra (one claim of N GPUs, each companion on one of them) or uuid-handoff",
        ),
    ]
