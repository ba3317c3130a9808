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
