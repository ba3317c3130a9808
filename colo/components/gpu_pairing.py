"""How the servers of one pod reach the same GPU: one function per `cluster.gpuPairing` method.

Each returns a `PodGpu`: what every server adds (GPU requests, claims, env, a command prefix) and what the
pod adds (init containers, volumes, claims, affinity). Which method fits which platform is checked
earlier, in colo.plan.platform.

A pair whose LLM spans N GPUs (its plan's group) gets those N GPUs once for the whole pod, recorded in the
order vLLM numbers its ranks: one UUID a line in PCI bus order (gpu-uuid-discover.sh). The LLM maps every line,
so rank k runs on line k's GPU; each companion maps the one line of the GPU its plan put it on. Time-slicing
cannot express this and is refused by the plan before anything is declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from colo.components.containers import SCRIPTS_VOLUME, helper_resources
from colo.components.device_plugin import SHARED_RESOURCE, WHOLE_RESOURCE
from colo.components.gpu_claim import CLAIM_NAME, group_request
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


def _uuid_mount(read_only: bool) -> k8s.core.v1.VolumeMountArgs:
    return k8s.core.v1.VolumeMountArgs(name=UUID_VOLUME, mount_path=UUID_DIR, read_only=read_only or None)


def _uuid_volume() -> k8s.core.v1.VolumeArgs:
    return k8s.core.v1.VolumeArgs(name=UUID_VOLUME, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs())


def _discover(
    name: str,
    image: str,
    env: dict[str, str],
    *,
    limits: dict[str, str] | None = None,
    request: str | None = None,
) -> k8s.core.v1.ContainerArgs:
    """A plain init container that records the GPUs it was given (gpu-uuid-discover.sh)."""
    scripts_mount = k8s.core.v1.VolumeMountArgs(name=SCRIPTS_VOLUME, mount_path=SCRIPTS_DIR, read_only=True)
    resources = helper_resources(limits or {})
    if request is not None:
        resources = k8s.core.v1.ResourceRequirementsArgs(
            requests=resources.requests,
            limits=resources.limits,
            claims=[k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME, request=request)],
        )
    return k8s.core.v1.ContainerArgs(
        name=name,
        image=image,
        command=["bash", script_path("gpu-uuid-discover.sh")],
        env=[
            k8s.core.v1.EnvVarArgs(name=k, value=v)
            for k, v in {"COLO_GPU_UUID_FILE": UUID_FILE, **env}.items()
        ],
        resources=resources,
        security_context=container_security_context(),
        volume_mounts=[_uuid_mount(False), scripts_mount],
    )


def _consumer(server: Server, slots: str, count: int, *, see_all: bool) -> ServerGpu:
    """A server that maps lines `slots` of the recorded UUIDs (gpu-uuid-consume.sh); `see_all`: it requests no
    GPU and sees every GPU of the node through NVIDIA_VISIBLE_DEVICES=all."""
    env = {
        "COLO_GPU_UUID_FILE": UUID_FILE,
        "COLO_VLLM_ACCEPTS_UUID": "true" if server.accepts_gpu_uuid else "false",
    }
    if count > 1:
        env |= {"COLO_GPU_COUNT": str(count), "COLO_GPU_SLOTS": slots}
    if see_all:
        env = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility", **env}
    return ServerGpu(
        env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in env.items()],
        mounts=[_uuid_mount(True)],
        command_prefix=["bash", script_path("gpu-uuid-consume.sh"), "--"],
    )


def _group(pair: PairPlan) -> tuple[int, list[int]]:
    """A tensor-parallel pair's GPU count and each companion's GPU of the group, in start order."""
    group = pair.group
    assert group is not None
    return group.tensor_parallel_size, list(group.companion_gpus)


def time_slice(pair: PairPlan, context: PairingContext) -> PodGpu:
    """Every server asks for one slice. The plugin offers as many slices per GPU as the largest pair has
    servers, and time-slice is allowed on single-GPU nodes only; so one pair per node keeps a pair's slices
    on its own GPU even when pairs differ in size."""
    if pair.group is not None:  # colo.plan.platform refuses it first, with the reason
        raise ValueError(f"time-slice cannot place the tensor-parallel LLM of pair {pair.name}")
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
    """One ResourceClaim per pod, from the template; every server references it, so all see one GPU.

    A tensor-parallel pair's claim holds one request per GPU of the group: each companion references the
    request of its GPU and sees that GPU alone, the LLM references the whole claim. Which allocated device
    answers which request only the scheduler knows, so one plain init container per request, each seeing its
    request's GPU, records it as that line of the UUID file, in request order; the LLM maps the lines in
    order, and rank k lands on request gpu-k's GPU, the one the companion placed there sees."""
    if context.claim_template is None:
        raise ValueError("dra pairing needs the ResourceClaimTemplate's name")
    claims = [
        k8s.core.v1.PodResourceClaimArgs(name=CLAIM_NAME, resource_claim_template_name=context.claim_template)
    ]
    whole = k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME)
    if pair.group is None:
        return PodGpu(servers=[ServerGpu(claims=[whole]) for _ in pair.servers], resource_claims=claims)
    size, placed = _group(pair)
    companions = [
        ServerGpu(claims=[k8s.core.v1.ResourceClaimArgs(name=CLAIM_NAME, request=group_request(gpu))])
        for gpu in placed
    ]
    llm = _consumer(pair.llm, "all", size, see_all=False)
    recorders = [
        _discover(
            f"{UUID_INIT_CONTAINER}-{gpu}",
            pair.llm.image,
            {"COLO_GPU_SLOT": str(gpu)},
            request=group_request(gpu),
        )
        for gpu in range(size)
    ]
    return PodGpu(
        servers=[
            *companions,
            ServerGpu(claims=[whole], env=llm.env, mounts=llm.mounts, command_prefix=llm.command_prefix),
        ],
        init_containers=recorders,
        volumes=[_uuid_volume()],
        resource_claims=claims,
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

    A tensor-parallel pair: the init container requests the group's N GPUs and records them in PCI bus order;
    the LLM requests the same N and so holds these very GPUs, mapping every line in order; each companion
    requests none and maps the line of the GPU its plan put it on.
    """
    if pair.group is not None:
        return _uuid_handoff_group(pair)
    holder, *others = pair.servers
    discover = _discover(UUID_INIT_CONTAINER, holder.image, {}, limits={WHOLE_RESOURCE: "1"})
    consumers = [uuid_consumer(server) for server in others]
    return PodGpu(
        servers=[ServerGpu(limits={WHOLE_RESOURCE: "1"}), *consumers],
        init_containers=[discover],
        volumes=[_uuid_volume()],
    )


def _uuid_handoff_group(pair: PairPlan) -> PodGpu:
    size, placed = _group(pair)
    gpus = {WHOLE_RESOURCE: str(size)}
    discover = _discover(UUID_INIT_CONTAINER, pair.llm.image, {"COLO_GPU_COUNT": str(size)}, limits=gpus)
    companions = [
        _consumer(server, str(gpu), size, see_all=True)
        for server, gpu in zip(pair.servers[:-1], placed, strict=True)
    ]
    llm = _consumer(pair.llm, "all", size, see_all=False)
    return PodGpu(
        servers=[
            *companions,
            ServerGpu(limits=gpus, env=llm.env, mounts=llm.mounts, command_prefix=llm.command_prefix),
        ],
        init_containers=[discover],
        volumes=[_uuid_volume()],
    )


def uuid_consumer(server: Server) -> ServerGpu:
    """A server that requests no GPU, sees every GPU, and points CUDA at the one the init container recorded."""
    return _consumer(server, "0", 1, see_all=True)


PAIRING: dict[str, Callable[[PairPlan, PairingContext], PodGpu]] = {
    "time-slice": time_slice,
    "dra": dra,
    "uuid-handoff": uuid_handoff,
}
