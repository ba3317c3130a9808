"""kwok nodes shaped like the EKS GPU instances colo plans, and what NVIDIA's GPU software publishes about them.

Labels are those GPU feature discovery writes (NVIDIA/k8s-device-plugin, internal/lm/resource.go at
f666bc3f836a09ae2fda439f3d7a8d8b06b48ac4: `gpu.product` is the device name with blanks turned into '-',
`gpu.family` follows the compute capability, `gpu.memory` in MiB), plus the instance-type and zone labels EKS
gives every node. The taint is the one EKS puts on accelerated nodes and colo's node pool declares:
`nvidia.com/gpu=true:NoSchedule`. Capacity is what the device plugin advertises: `nvidia.com/gpu` per GPU, or,
with time-slicing and renameByDefault, `nvidia.com/gpu: 0` and `nvidia.com/gpu.shared` = GPUs x replicas (NVIDIA
GPU Operator docs, "Time-Slicing GPUs in Kubernetes"). On a DRA node no device plugin runs: the GPUs are devices
of a ResourceSlice of driver `gpu.nvidia.com`, named `gpu-<minor>` with the attributes the driver's kubelet
plugin sets (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin/deviceinfo.go at
0545e9e55d69ba07ccc288283e144efbc9d292fa), selected by the `gpu.nvidia.com` DeviceClass.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from tests.control_plane.cluster import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
DRA_DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.95.05"  # an R580 driver, as the EKS AL2023 NVIDIA AMIs of late 2026 carry
CUDA_DRIVER_VERSION = "13.0"

Plugin = Literal["whole", "time-slicing", "dra"]


@dataclass(frozen=True)
class GpuModel:
    device_name: str  # as NVML reports it
    memory_mib: int  # nvidia-smi memory.total
    compute_capability: tuple[int, int]

    @property
    def product_label(self) -> str:
        return "-".join(self.device_name.split())

    @property
    def family(self) -> str:
        major, minor = self.compute_capability
        if major == 8:
            return "ampere" if minor < 9 else "ada-lovelace"
        return {9: "hopper", 10: "blackwell", 12: "blackwell"}[major]


L40S = GpuModel("NVIDIA L40S", 46068, (8, 9))
H200 = GpuModel("NVIDIA H200", 143771, (9, 0))  # memory.total as measured (measured-facts)
A100_40GB = GpuModel("NVIDIA A100-SXM4-40GB", 40960, (8, 0))


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: GpuModel
    gpus: int
    vcpus: int
    memory_mib: int


G6E_XLARGE = InstanceType("g6e.xlarge", L40S, 1, 4, 32768)
G6E_2XLARGE = InstanceType("g6e.2xlarge", L40S, 1, 8, 65536)
G6E_12XLARGE = InstanceType("g6e.12xlarge", L40S, 4, 48, 393216)
P5E_48XLARGE = InstanceType("p5e.48xlarge", H200, 8, 192, 2097152)
P4D_24XLARGE = InstanceType("p4d.24xlarge", A100_40GB, 8, 96, 1179648)

# NVML's architecture names, as the DRA driver publishes them.
ARCHITECTURE_NAMES = {
    "ampere": "Ampere",
    "ada-lovelace": "Ada Lovelace",
    "hopper": "Hopper",
    "blackwell": "Blackwell",
}
GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}


def gpu_feature_labels(instance: InstanceType, plugin: Plugin, replicas: int) -> dict[str, str]:
    gpu = instance.gpu
    major, minor = gpu.compute_capability
    driver_major, driver_minor, driver_rev = DRIVER_VERSION.split(".")
    return {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": gpu.product_label,
        "nvidia.com/gpu.count": str(instance.gpus),
        "nvidia.com/gpu.memory": str(gpu.memory_mib),
        "nvidia.com/gpu.family": gpu.family,
        "nvidia.com/gpu.compute.major": str(major),
        "nvidia.com/gpu.compute.minor": str(minor),
        "nvidia.com/gpu.machine": instance.name,
        "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": "time-slicing" if plugin == "time-slicing" else "none",
        "nvidia.com/mig.capable": "false",
        "nvidia.com/cuda.driver-version.full": DRIVER_VERSION,
        "nvidia.com/cuda.driver.major": driver_major,
        "nvidia.com/cuda.driver.minor": driver_minor,
        "nvidia.com/cuda.driver.rev": driver_rev,
    }


def gpu_capacity(instance: InstanceType, plugin: Plugin, replicas: int) -> dict[str, str]:
    if plugin == "dra":
        return {}
    if plugin == "time-slicing":
        return {GPU_RESOURCE: "0", SHARED_RESOURCE: str(instance.gpus * replicas)}
    return {GPU_RESOURCE: str(instance.gpus)}


def node(
    name: str,
    instance: InstanceType,
    plugin: Plugin,
    *,
    pool_labels: dict[str, str],
    replicas: int = 1,
    zone: str = "us-east-1a",
) -> dict[str, Any]:
    """A Node object kwok takes over: Ready once kwok starts its heartbeat, with the capacity given here."""
    resources = {
        "cpu": str(instance.vcpus),
        "memory": f"{instance.memory_mib}Mi",
        "pods": "110",
        "ephemeral-storage": "500Gi",
        **gpu_capacity(instance, plugin, replicas),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": instance.name,
                "topology.kubernetes.io/region": zone[:-1],
                "topology.kubernetes.io/zone": zone,
                "type": "kwok",
                **gpu_feature_labels(instance, plugin, replicas),
                **pool_labels,
            },
        },
        "spec": {"taints": [GPU_TAINT]},
        "status": {"capacity": resources, "allocatable": resources},
    }


def gpu_uuid(node_name: str, minor: int) -> str:
    """A made-up GPU UUID in NVML's format, the same for a node and GPU in every run."""
    digest = hashlib.sha256(f"{node_name}/{minor}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def semver(version: str) -> str:
    """A driver version as the DRA driver publishes it: parsed as semver, so 580.95.05 becomes 580.95.5."""
    return ".".join(str(int(part)) for part in version.split("."))


def resource_slice(node_name: str, instance: InstanceType) -> dict[str, Any]:
    """The slice the NVIDIA DRA driver's kubelet plugin publishes for a node's full GPUs."""
    gpu = instance.gpu
    major, minor = gpu.compute_capability
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": gpu_uuid(node_name, index)},
                "productName": {"string": gpu.device_name},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": ARCHITECTURE_NAMES[gpu.family]},
                "cudaComputeCapability": {"version": f"{major}.{minor}.0"},
                "driverVersion": {"version": semver(DRIVER_VERSION)},
                "cudaDriverVersion": {"version": f"{CUDA_DRIVER_VERSION}.0"},
            },
            "capacity": {"memory": {"value": f"{gpu.memory_mib}Mi"}},
        }
        for index in range(instance.gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRA_DRIVER}"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


DEVICE_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": DRA_DRIVER},
    "spec": {
        "selectors": [
            {
                "cel": {
                    "expression": f"device.driver == '{DRA_DRIVER}' && device.attributes['{DRA_DRIVER}'].type == 'gpu'"
                }
            }
        ]
    },
}
