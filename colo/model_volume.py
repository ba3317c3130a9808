"""The model volume's layout: where every container mounts it, and where synced weights live on it.

Kept free of colo's other modules: `python -m colo.aws.weight_sync` imports it inside the sync image,
which carries boto3 and little else.
"""

from __future__ import annotations

MODEL_ROOT = "/models"  # where the model volume is mounted in every container
COMPLETE_MARKER = ".colo-complete"  # written last by colo.aws.weight_sync: the copy beside it is whole


def weights_dir(pair: str, role: str) -> str:
    """Where a server's weights copied from weightsUri live on the model volume."""
    return f"{MODEL_ROOT}/{pair}/{role}"


# vLLM's compile caches (colo.plan.compile_cache): beside the weights, out of the weight sync's way.
COMPILE_CACHE_ROOT = ".vllm-cache"


def compile_cache_dir(pair: str, role: str, key: str) -> str:
    """A server's compile cache on the model volume, relative to its root (a volume subPath)."""
    return f"{COMPILE_CACHE_ROOT}/{pair}-{role}/{key}"
