"""How much disk a GPU node needs for the pairs placed on it: their images and weights. Pure.

The managed node group (colo.plan.node_pool) and Karpenter's EC2NodeClass (colo.plan.capacity) size their image
volume from it; for EKS Auto Mode the plan compares it with the NodeClass's ephemeral storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from colo.catalog import GIB
from colo.plan.pair import PairPlan

# A vLLM image is ~10 GiB compressed; containerd keeps the compressed layers and the unpacked snapshot,
# and an image update briefly holds two versions.
IMAGE_ALLOWANCE_GIB = 30
SYSTEM_ALLOWANCE_GIB = 20  # OS, kubelet, logs, the weight-sync image
VOLUME_STEP_GIB = 10
MIN_VOLUME_GIB = 100  # the least colo gives a GPU node's image volume, whatever the plan needs


def _checkpoint_bytes(pairs: Sequence[PairPlan], node: int) -> int:
    total = 0
    for pair in pairs:
        if pair.placement.node != node:
            continue
        for server in pair.servers:
            budget = server.memory_plan.budget
            # a tensor-parallel rank holds 1/N of the weights: the files hold them all
            total += (
                budget.spec.arch.checkpoint_bytes or budget.weights_bytes * budget.spec.tensor_parallel_size
            )
    return total


def _images_on(pairs: Sequence[PairPlan], node: int) -> int:
    return len({s.image for p in pairs if p.placement.node == node for s in p.servers})


def disk_need_gib(pairs: Sequence[PairPlan]) -> int:
    """Room for the busiest node's images and, where the model volume is node-local, its weights, rounded up to
    VOLUME_STEP_GIB; 0 without pairs."""
    largest = 0
    for node in {pair.placement.node for pair in pairs}:
        weights_gib = ceil(_checkpoint_bytes(pairs, node) / GIB)
        need = _images_on(pairs, node) * IMAGE_ALLOWANCE_GIB + weights_gib + SYSTEM_ALLOWANCE_GIB
        largest = max(largest, need)
    return ceil(largest / VOLUME_STEP_GIB) * VOLUME_STEP_GIB
