"""How the servers of one pod reach the same GPU: one function per `cluster.gpuPairing` method.

Each returns a `PodGpu`: what every server adds (GPU requests, claims, env, a command prefix) and what the
pod adds (init containers, volumes, claims, affinity). Which method fits which platform is checked
earlier, in colo.plan.platform.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import SCRIPTS_VOLUME, helper_resources
from colo.components.device_plugin import SHARED_RESOURCE, WHOLE_RESOURCE
from colo.components.gpu_claim import CLAIM_NAME
from colo.components.pod_scripts import SCRIPTS_DIR, script_path
from colo.components.pod_security import container_security_context
from colo.plan.pair import PairPlan
from colo.plan.server import Server

UUID_DIR = "/run/colo/gpu"
UUID_FILE = f"{UUID_DIR}/uuid"
UUID_VOLUME = "gpu-uuid"
UUID_INIT_CONTAINER = "gpu-uuid"


@dataclass(frozen=True)
class ServerGpu:
    limits: dict[str, str] = field(default_factory=dict)
    claims: list[k8s.core.v1.ResourceClaimArgs] = field(default_factory=list)
    env: list[k8s.core.v1.EnvVarArgs] = field(default_factory=list)
    mounts: list[k8s.core.v1.VolumeMountArgs] = field(default_factory=list)
    command_prefix: list[str] = field(default_factory=list)
    shm_from_gpu: bool = False  # the GPU's driver mounts /dev/shm (DRA with MPS): colo mounts none of its own

    @property
    def uses_scripts(self) -> bool:
        return bool(self.command_prefix)


@dataclass(frozen=True)
class PodGpu:
    servers: list[ServerGpu]  # in the plan's start order
    init_containers: list[k8s.core.v1.ContainerArgs] = field(default_factory=list)
    volumes: list[k8s.core.v1.VolumeArgs] = field(default_factory=list)
    resource_claims: list[k8s.core.v1.PodResourceClaimArgs] = field(default_factory=list)
    affinity: k8s.core.v1.AffinityArgs | None = None
    share_process_namespace: bool = (
        False  # one PID namespace for the pod (an in-pod MPS daemon sees its clients)
    )

    @property
    def uses_scripts(self) -> bool:
        return bool(self.init_containers) or any(server.uses_scripts for server in self.servers)


@dataclass(frozen=True)
class PairingContext:
    """What the pairing methods need from the rest of the stack."""

    selector: dict[str, str]  # labels of every colo pair pod of this stack
    claim_template: pulumi.Input[str] | None = None


def time_slice(pair: PairPlan, context: PairingContext) -> PodGpu:
    """Every server asks for one slice. The plugin offers as many slices per GPU as the largest pair has
    servers, and time-slice is allowed on single-GPU nodes only; so one pair per node keeps a pair's slices
    on its own GPU even when pairs differ in size."""
    one_per_node = k8s.core.v1.AffinityArgs(
        pod_anti_affinity=k8s.core.v1.PodAntiAffinityArgs(
            required_during_scheduling_ignored_during_execution=[
                k8s.core.v1.PodAffinityTermArgs(
                    label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=context.selector),
                    topology_key="kubernetes.io/hostname",
                )
            ]
        )
    )
    return PodGpu(
        servers=[ServerGpu(limits={SHARED_RESOURCE: "1"}) for _ in pair.servers], affinity=one_per_node
    )


def dra(pair: PairPlan, context: PairingContext) -> PodGpu:
    """One ResourceClaim per pod, from the template; every server references it, so all see one GPU."""
    if context.claim_template is None:
        raise ValueError("dra pairing needs the ResourceClaimTemplate's name")
    return PodGpu(
        servers=[ServerGpu(claims=[k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME)]) for _ in pair.servers],
        resource_claims=[
            k8s.core.v1.PodResourceClaimArgs(
                name=CLAIM_NAME, resource_claim_template_name=context.claim_template
            )
        ],
    )


def uuid_handoff(pair: PairPlan, context: PairingContext) -> PodGpu:
    """The field report's method, made safe.

    A plain init container requests the GPU and records its UUID. Kubelet's device manager hands a
    finished init container's devices to the next container of the pod that requests the same resource
    (pkg/kubelet/cm/devicemanager/manager.go: Allocate adds a non-restartable init container's devices to
    devicesToReuse, and devicesToAllocate "Allocates from reusableDevices list first"), so the first
    server gets that very GPU, whether it runs as an app container or as a native sidecar. A restartable
    init container would keep its devices instead of passing them on, so the UUID container must stay a
    plain one. Reuse has been kubelet behaviour since device plugins went beta (1.10); the restartable
    exception exists since sidecars arrived (1.28). The later servers request no GPU, see every GPU
    through NVIDIA_VISIBLE_DEVICES=all, and point CUDA at the recorded one.
    """
    holder, *others = pair.servers
    uuid_mount = k8s.core.v1.VolumeMountArgs(name=UUID_VOLUME, mount_path=UUID_DIR)
    scripts_mount = k8s.core.v1.VolumeMountArgs(name=SCRIPTS_VOLUME, mount_path=SCRIPTS_DIR, read_only=True)
    discover = k8s.core.v1.ContainerArgs(
        name=UUID_INIT_CONTAINER,
        image=holder.image,
        command=["bash", script_path("gpu-uuid-discover.sh")],
        env=[k8s.core.v1.EnvVarArgs(name="COLO_GPU_UUID_FILE", value=UUID_FILE)],
        resources=helper_resources({WHOLE_RESOURCE: "1"}),
        security_context=container_security_context(),
        volume_mounts=[uuid_mount, scripts_mount],
    )
    consumers = [uuid_consumer(server) for server in others]
    return PodGpu(
        servers=[ServerGpu(limits={WHOLE_RESOURCE: "1"}), *consumers],
        init_containers=[discover],
        volumes=[k8s.core.v1.VolumeArgs(name=UUID_VOLUME, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs())],
    )


def uuid_consumer(server: Server) -> ServerGpu:
    """A server that requests no GPU, sees every GPU, and points CUDA at the one the init container recorded."""
    return ServerGpu(
        env=[
            k8s.core.v1.EnvVarArgs(name="NVIDIA_VISIBLE_DEVICES", value="all"),
            k8s.core.v1.EnvVarArgs(name="NVIDIA_DRIVER_CAPABILITIES", value="compute,utility"),
            k8s.core.v1.EnvVarArgs(name="COLO_GPU_UUID_FILE", value=UUID_FILE),
            k8s.core.v1.EnvVarArgs(
                name="COLO_VLLM_ACCEPTS_UUID",
                value="true" if server.accepts_gpu_uuid else "false",
            ),
        ],
        mounts=[k8s.core.v1.VolumeMountArgs(name=UUID_VOLUME, mount_path=UUID_DIR, read_only=True)],
        command_prefix=["bash", script_path("gpu-uuid-consume.sh"), "--"],
    )


PAIRING: dict[str, Callable[[PairPlan, PairingContext], PodGpu]] = {
    "time-slice": time_slice,
    "dra": dra,
    "uuid-handoff": uuid_handoff,
}
