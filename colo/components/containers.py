"""Container and pod pieces every vLLM server shares: volumes, probes, environment; and the init
container that copies weights from S3 into the model volume. Security contexts: colo.components.pod_security.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from colo.components.pod_scripts import SCRIPTS_DIR
from colo.components.pod_security import container_security_context
from colo.model_volume import MODEL_ROOT
from colo.plan.server import Server
from colo.plan.weight_sync_step import WeightSyncStep

CACHE_DIR = "/cache"  # HOME, Hugging Face, vLLM, torch.compile and Triton caches all land here
# Where a server's compile-cache directory of the model volume is mounted (colo.plan.compile_cache); VLLM_CACHE_ROOT
# points there, and vLLM puts the Inductor and Triton caches under it.
COMPILE_CACHE_DIR = "/vllm-cache"
HEALTH_PATH = "/health"
# With an API key set, vLLM's AuthenticationMiddleware asks for it only on paths under these prefixes
# ("/v1" up to 0.21; "/v1", "/v2", "/inference" from 0.22; "/cohere" too from 0.27: vllm <version>
# vllm/entrypoints/openai/api_server.py::AuthenticationMiddleware, from 0.29
# vllm/entrypoints/serve/middleware/authenticate.py, GUARDED_PREFIX). Probes and the start gate call
# HEALTH_PATH, which lies outside all of them, so they need no key.
API_KEY_GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
# Kubernetes waits 1 s for a probe by default. A vLLM server busy with a long prefill can take longer than
# that to answer /health, and three such misses in a row would restart a healthy server.
RUNNING_PROBE_TIMEOUT_S = 5
RUNNING_PROBE_FAILURES = 3
# /dev/shm carries vLLM's IPC buffers between its processes and, for a tensor-parallel LLM, its message queue to
# the ranks and NCCL's host-side buffers; memory-backed, it counts against the container's memory limit. What a
# tensor-parallel group needs there is not measured yet (docs/tensor-parallel.md): 1 GiB, as for one GPU.
SHM_SIZE = "1Gi"
# The UUID init container only runs nvidia-smi.
HELPER_CPU, HELPER_MEMORY = "100m", "128Mi"
# The weight sync streams 8 MiB blocks and hashes each file once: one core's half keeps up with S3.
SYNC_CPU, SYNC_MEMORY = "500m", "512Mi"

SHM_VOLUME, CACHE_VOLUME, TMP_VOLUME, MODELS_VOLUME, SCRIPTS_VOLUME = (
    "dshm",
    "cache",
    "tmp",
    "models",
    "scripts",
)


def shared_volumes(
    model_claim: pulumi.Input[str], scripts_config_map: pulumi.Input[str] | None, *, models_writable: bool
) -> list[k8s.core.v1.VolumeArgs]:
    """`models_writable` only where a weight sync or a compile cache writes the volume; servers mount the weights
    read-only anyway."""
    volumes = [
        k8s.core.v1.VolumeArgs(
            name=SHM_VOLUME,
            empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(medium="Memory", size_limit=SHM_SIZE),
        ),
        k8s.core.v1.VolumeArgs(name=CACHE_VOLUME, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
        k8s.core.v1.VolumeArgs(name=TMP_VOLUME, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs()),
        k8s.core.v1.VolumeArgs(
            name=MODELS_VOLUME,
            persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(
                claim_name=model_claim, read_only=None if models_writable else True
            ),
        ),
    ]
    if scripts_config_map is not None:
        volumes.append(
            k8s.core.v1.VolumeArgs(
                name=SCRIPTS_VOLUME, config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=scripts_config_map)
            )
        )
    return volumes


def server_mounts(
    uses_scripts: bool, *, shm: bool = True, compile_cache: str | None = None
) -> list[k8s.core.v1.VolumeMountArgs]:
    """`shm=False` where the GPU's driver mounts /dev/shm itself (colo.components.mps_daemon). The weights stay
    read-only; `compile_cache`, a directory of the same volume, is the one place a server writes there."""
    mounts = [
        *([k8s.core.v1.VolumeMountArgs(name=SHM_VOLUME, mount_path="/dev/shm")] if shm else []),
        k8s.core.v1.VolumeMountArgs(name=CACHE_VOLUME, mount_path=CACHE_DIR),
        k8s.core.v1.VolumeMountArgs(name=TMP_VOLUME, mount_path="/tmp"),
        k8s.core.v1.VolumeMountArgs(name=MODELS_VOLUME, mount_path=MODEL_ROOT, read_only=True),
    ]
    if compile_cache:
        mounts.append(
            k8s.core.v1.VolumeMountArgs(
                name=MODELS_VOLUME, mount_path=COMPILE_CACHE_DIR, sub_path=compile_cache
            )
        )
    if uses_scripts:
        mounts.append(
            k8s.core.v1.VolumeMountArgs(name=SCRIPTS_VOLUME, mount_path=SCRIPTS_DIR, read_only=True)
        )
    return mounts


def weight_sync_container(step: WeightSyncStep) -> k8s.core.v1.ContainerArgs:
    """A plain init container: it runs to completion before any server starts, and requests no GPU."""
    return k8s.core.v1.ContainerArgs(
        name=step.name,
        image=step.image,
        image_pull_policy="IfNotPresent",
        command=list(step.command),
        args=list(step.args),
        env=[k8s.core.v1.EnvVarArgs(name=name, value=value) for name, value in step.env.items()],
        resources=k8s.core.v1.ResourceRequirementsArgs(
            requests={"cpu": SYNC_CPU, "memory": SYNC_MEMORY}, limits={"memory": SYNC_MEMORY}
        ),
        security_context=container_security_context(),
        volume_mounts=[
            k8s.core.v1.VolumeMountArgs(name=MODELS_VOLUME, mount_path=step.mount_path),
            k8s.core.v1.VolumeMountArgs(name=TMP_VOLUME, mount_path="/tmp"),
        ],
    )


@dataclass(frozen=True)
class SecretRef:
    """An environment variable read from a key of a Secret (its name an output, so pods wait for it)."""

    env: str
    secret: pulumi.Input[str]
    key: str


def server_env(
    secrets: Sequence[SecretRef], compile_cache: str | None = None
) -> list[k8s.core.v1.EnvVarArgs]:
    """`compile_cache`: the server's directory on the model volume; None leaves vLLM's cache under HOME."""
    env = [
        k8s.core.v1.EnvVarArgs(name="HOME", value=CACHE_DIR),
        k8s.core.v1.EnvVarArgs(name="XDG_CACHE_HOME", value=CACHE_DIR),
        k8s.core.v1.EnvVarArgs(name="HF_HOME", value=f"{CACHE_DIR}/huggingface"),
        *([k8s.core.v1.EnvVarArgs(name="VLLM_CACHE_ROOT", value=COMPILE_CACHE_DIR)] if compile_cache else []),
        k8s.core.v1.EnvVarArgs(name="VLLM_NO_USAGE_STATS", value="1"),
        k8s.core.v1.EnvVarArgs(name="DO_NOT_TRACK", value="1"),
    ]
    env += [
        k8s.core.v1.EnvVarArgs(
            name=ref.env,
            value_from=k8s.core.v1.EnvVarSourceArgs(
                secret_key_ref=k8s.core.v1.SecretKeySelectorArgs(name=ref.secret, key=ref.key)
            ),
        )
        for ref in secrets
    ]
    return env


def _health(server: Server) -> k8s.core.v1.HTTPGetActionArgs:
    return k8s.core.v1.HTTPGetActionArgs(path=HEALTH_PATH, port=server.port)


def startup_probe(server: Server) -> k8s.core.v1.ProbeArgs:
    """The only probe that waits for a cold start; its budget comes from the plan."""
    return k8s.core.v1.ProbeArgs(
        http_get=_health(server),
        period_seconds=server.probe.period_seconds,
        failure_threshold=server.probe.failure_threshold,
    )


def running_probe(server: Server) -> k8s.core.v1.ProbeArgs:
    """Readiness and liveness: they start after the startup probe passed, so no initial delay."""
    return k8s.core.v1.ProbeArgs(
        http_get=_health(server),
        period_seconds=server.probe.period_seconds,
        timeout_seconds=RUNNING_PROBE_TIMEOUT_S,
        failure_threshold=RUNNING_PROBE_FAILURES,
    )


def health_url(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}{HEALTH_PATH}"


def helper_resources(gpu_limits: dict[str, str]) -> k8s.core.v1.ResourceRequirementsArgs:
    return k8s.core.v1.ResourceRequirementsArgs(
        requests={"cpu": HELPER_CPU, "memory": HELPER_MEMORY, **gpu_limits},
        limits={"memory": HELPER_MEMORY, **gpu_limits},
    )


def tolerations(specs: Sequence[Mapping[str, str]]) -> list[k8s.core.v1.TolerationArgs]:
    return [
        k8s.core.v1.TolerationArgs(key=t["key"], operator=t["operator"], effect=t["effect"]) for t in specs
    ]
