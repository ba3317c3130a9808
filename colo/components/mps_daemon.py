"""CUDA MPS in a pair's pod (cluster.computeSharing: mps): what each pairing method's pod shape gains.

In-pod daemon (uuid-handoff, time-slice). A restartable init container runs `nvidia-cuda-mps-control -f` on the
pair's GPU, before every server: its startup probe asks the daemon for its server list, so kubelet starts the
servers only once it answers, and a server can never come up as a plain CUDA context beside the others (with the
GPU in compute mode Default, a client that finds no daemon silently runs without MPS). The daemon and the
servers share:

- the pipe directory (CUDA_MPS_PIPE_DIRECTORY, an emptyDir): the daemon's control socket and the MPS server's;
- /dev/shm: colo's memory-backed emptyDir, mounted by every container already, where the MPS server creates its
  shared memory region (NVIDIA's device plugin and DRA driver likewise share one /dev/shm between daemon and
  clients, by mount, with no host IPC namespace: k8s-device-plugin internal/plugin/mps.go);
- the UID: every container runs as colo's UID, and the control daemon starts the MPS server as its client's UID
  and serves clients of that UID only, so all stay unprivileged and the pod meets the `restricted` level;
- one PID namespace (shareProcessNamespace, allowed at `restricted`): the daemon sees its clients' PIDs instead of
  0, and a reaping PID 1 collects the MPS servers it ends.

The binary is the node's: NVIDIA's container toolkit injects nvidia-cuda-mps-control and nvidia-cuda-mps-server
into containers granted the `compute` driver capability (libnvidia-container src/nvc_info.c `compute_bins`; the
CDI specs of nvidia-container-toolkit list both among the driver binaries), so the daemon runs the LLM's pinned
image, which declares compute and utility, and its version is always the driver's.

The daemon's GPU: under uuid-handoff it requests the whole GPU and kubelet gives it the device of the finished
UUID init container (a restartable init container allocates from the reusable devices first, then keeps them), so
every server requests none and points CUDA at the recorded UUID; on time-slice nodes it takes one more slice.

DRA: NVIDIA's driver runs the daemon for the claim and mounts its pipe directory and /dev/shm into each container
(its CDI edits), so the servers mount no /dev/shm of colo's. The device plugin's own MPS mode mounts the same
(k8s-device-plugin internal/plugin/mps.go), so there too colo adds only the servers' thread caps.
"""

from __future__ import annotations

from dataclasses import replace

import pulumi_kubernetes as k8s

from colo.components.containers import SHM_VOLUME
from colo.components.device_plugin import SHARED_RESOURCE, WHOLE_RESOURCE
from colo.components.gpu_pairing import PAIRING, PairingContext, PodGpu, ServerGpu, uuid_consumer
from colo.components.pod_security import container_security_context
from colo.plan.pair import PairPlan

DAEMON_CONTAINER = "mps-control"
CONTROL = "nvidia-cuda-mps-control"
PIPE_DIR, LOG_DIR = "/run/colo/mps/pipe", "/run/colo/mps/log"
PIPE_VOLUME, LOG_VOLUME = "mps-pipe", "mps-log"
# The daemon answers this on its control socket, listing no server until the first client connects; it fails
# while no daemon listens (as NVIDIA's device plugin checks it: cmd/mps-control-daemon/mps/daemon.go).
ANSWERS = ["sh", "-c", f"echo get_server_list | {CONTROL}"]
STARTUP_PERIOD_S, STARTUP_FAILURES = 1, 60
LIVENESS_PERIOD_S, LIVENESS_TIMEOUT_S, LIVENESS_FAILURES = 10, 5, 3
# The MPS server the daemon starts runs in the daemon's container, so its host memory counts here. Not measured
# yet: bench/gpu/harness records the daemon's and the MPS server's resident memory under load.
DAEMON_CPU, DAEMON_MEMORY = "250m", "512Mi"


def _pipe_env() -> k8s.core.v1.EnvVarArgs:
    return k8s.core.v1.EnvVarArgs(name="CUDA_MPS_PIPE_DIRECTORY", value=PIPE_DIR)


def _pipe_mount() -> k8s.core.v1.VolumeMountArgs:
    return k8s.core.v1.VolumeMountArgs(name=PIPE_VOLUME, mount_path=PIPE_DIR)


def _running_probe(answers: k8s.core.v1.ExecActionArgs) -> k8s.core.v1.ProbeArgs:
    """Readiness and liveness once started: a daemon that stops answering is restarted (and its clients fail)."""
    return k8s.core.v1.ProbeArgs(
        exec_=answers,
        period_seconds=LIVENESS_PERIOD_S,
        timeout_seconds=LIVENESS_TIMEOUT_S,
        failure_threshold=LIVENESS_FAILURES,
    )


def daemon_container(image: str, gpu_limits: dict[str, str]) -> k8s.core.v1.ContainerArgs:
    """The control daemon in the foreground (it exits with the container), as a native sidecar."""
    answers = k8s.core.v1.ExecActionArgs(command=ANSWERS)
    return k8s.core.v1.ContainerArgs(
        name=DAEMON_CONTAINER,
        image=image,
        image_pull_policy="IfNotPresent",
        command=[CONTROL, "-f"],
        env=[
            _pipe_env(),
            k8s.core.v1.EnvVarArgs(name="CUDA_MPS_LOG_DIRECTORY", value=LOG_DIR),
            k8s.core.v1.EnvVarArgs(name="NVIDIA_DRIVER_CAPABILITIES", value="compute,utility"),
        ],
        resources=k8s.core.v1.ResourceRequirementsArgs(
            requests={"cpu": DAEMON_CPU, "memory": DAEMON_MEMORY, **gpu_limits},
            limits={"memory": DAEMON_MEMORY, **gpu_limits},
        ),
        startup_probe=k8s.core.v1.ProbeArgs(
            exec_=answers, period_seconds=STARTUP_PERIOD_S, failure_threshold=STARTUP_FAILURES
        ),
        readiness_probe=_running_probe(answers),
        liveness_probe=_running_probe(answers),
        security_context=container_security_context(),
        volume_mounts=[
            _pipe_mount(),
            k8s.core.v1.VolumeMountArgs(name=LOG_VOLUME, mount_path=LOG_DIR),
            k8s.core.v1.VolumeMountArgs(name=SHM_VOLUME, mount_path="/dev/shm"),
        ],
        restart_policy="Always",
    )


def _as_client(server: ServerGpu) -> ServerGpu:
    return replace(server, env=[*server.env, _pipe_env()], mounts=[*server.mounts, _pipe_mount()])


def with_daemon(method: str, gpu: PodGpu, pair: PairPlan) -> PodGpu:
    """The pod shape of `method` with the pair's MPS control daemon ahead of its servers."""
    servers = list(gpu.servers)
    if method == "uuid-handoff":
        servers[0] = uuid_consumer(pair.servers[0])  # the daemon takes the handed-over GPU instead
        limits = {WHOLE_RESOURCE: "1"}
    else:
        limits = {SHARED_RESOURCE: "1"}
    empty = k8s.core.v1.EmptyDirVolumeSourceArgs()
    return replace(
        gpu,
        servers=[_as_client(server) for server in servers],
        init_containers=[*gpu.init_containers, daemon_container(pair.llm.image, limits)],
        volumes=[
            *gpu.volumes,
            k8s.core.v1.VolumeArgs(name=PIPE_VOLUME, empty_dir=empty),
            k8s.core.v1.VolumeArgs(name=LOG_VOLUME, empty_dir=empty),
        ],
        share_process_namespace=True,
    )


def pod_gpu(method: str, pair: PairPlan, context: PairingContext) -> PodGpu:
    """How the pair's servers reach one GPU (colo.components.gpu_pairing), and share its compute."""
    gpu = PAIRING[method](pair, context)
    route = pair.sharing.route if pair.sharing is not None else None
    if route == "in-pod daemon":
        return with_daemon(method, gpu, pair)
    if route in ("dra driver", "device plugin"):  # each mounts its daemon's /dev/shm into the servers itself
        return replace(gpu, servers=[replace(s, shm_from_gpu=True) for s in gpu.servers])
    return gpu
