"""The init container that copies a server's weights from S3 onto the model volume before the servers start.

The pod runs one per server with weightsUri, ahead of every server, with the model volume mounted
read-write at MODEL_ROOT (the servers mount it read-only). Kubelet starts the servers only after each has
exited 0, and the copy is published whole behind `ready_file`, so a server never loads a partial copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

from colo.catalog import MIB
from colo.model_volume import COMPLETE_MARKER, MODEL_ROOT, weights_dir
from colo.plan.probes import MARGIN_FACTOR
from colo.plan.server import Server

if TYPE_CHECKING:
    from colo.config.schema import StackConfig

# The sync image's entrypoint (Dockerfile), spelled out so the pod does not depend on it.
COMMAND = ("python", "-m", "colo.aws.weight_sync")


@dataclass(frozen=True)
class WeightSyncStep:
    name: str  # container name: sync-<pair>-<role>
    image: str  # storage.syncImage
    command: tuple[str, ...]
    args: tuple[str, ...]  # the S3 prefix, then the directory to publish the copy at
    env: dict[str, str]
    mount_path: str  # where the model volume must be mounted, read-write
    target: str  # the directory the server's --model points at
    ready_file: str  # exists only when `target` is a complete, verified copy
    seconds: int  # a first copy of the checkpoint at storage.hubDownloadMiBps, with the probes' margin


def weight_sync_step(pair: str, server: Server, config: StackConfig) -> WeightSyncStep | None:
    """None when the server loads from the Hugging Face Hub (no weightsUri)."""
    if server.weights_uri is None:
        return None
    image = config.storage.sync_image
    if image is None:  # the schema refuses such a stack; reaching here means it was bypassed
        raise ValueError(f"{server.name} sets weightsUri, which needs colo:storage.syncImage")
    target = weights_dir(pair, server.role)
    # Pods cannot reach instance metadata (the node pool allows one hop), so the region is given
    # explicitly; credentials come from the pod's service account (IRSA or EKS Pod Identity).
    env = {"PYTHONUNBUFFERED": "1"}
    if config.aws_region:
        env["AWS_REGION"] = config.aws_region
    budget = server.memory_plan.budget
    checkpoint_bytes = budget.spec.arch.checkpoint_bytes or budget.weights_bytes
    seconds = checkpoint_bytes / MIB / config.storage.hub_download_mib_per_s * MARGIN_FACTOR
    return WeightSyncStep(
        name=f"sync-{server.name}",
        image=image,
        command=COMMAND,
        args=(server.weights_uri, target),
        env=env,
        mount_path=MODEL_ROOT,
        target=target,
        ready_file=f"{target}/{COMPLETE_MARKER}",
        seconds=ceil(seconds),
    )
