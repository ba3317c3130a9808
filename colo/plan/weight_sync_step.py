"""The container that copies a server's weights from S3 onto the model volume before the server starts.

The Kubernetes side runs it as an init container (or a Job) with the model volume mounted at
MODEL_ROOT; the server container starts only after it exits 0, and may also wait for `ready_file`.
"""

from __future__ import annotations

from dataclasses import dataclass

from colo import __version__
from colo.plan.stack import MODEL_ROOT, PairPlan, Server, weights_dir

# The image built from this repository (colo and boto3, no GPU libraries), pinned to colo's version.
SYNC_IMAGE = f"colo:{__version__}"
COMPLETE_MARKER = ".colo-complete"  # the file colo.aws.weight_sync writes last


@dataclass(frozen=True)
class WeightSyncStep:
    name: str  # container name: sync-<pair>-<role>
    image: str
    command: tuple[str, ...]
    env: dict[str, str]
    mount_path: str  # where the model volume must be mounted
    target: str  # the directory the server's --model points at
    ready_file: str  # exists only when `target` is a complete, verified copy


def weight_sync_step(
    pair: PairPlan, server: Server, *, region: str | None, image: str = SYNC_IMAGE
) -> WeightSyncStep | None:
    """None when the server loads from the Hugging Face Hub (no weightsUri)."""
    if server.weights_uri is None:
        return None
    target = weights_dir(pair.name, server.role)
    # Pods cannot reach instance metadata (the node pool allows one hop), so the region is given
    # explicitly; credentials come from the pod's service account (IRSA or EKS Pod Identity).
    env = {"PYTHONUNBUFFERED": "1"}
    if region:
        env["AWS_REGION"] = region
    return WeightSyncStep(
        name=f"sync-{server.name}",
        image=image,
        command=("python", "-m", "colo.aws.weight_sync", server.weights_uri, target),
        env=env,
        mount_path=MODEL_ROOT,
        target=target,
        ready_file=f"{target}/{COMPLETE_MARKER}",
    )
