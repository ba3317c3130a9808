"""Pairs onto GPUs onto nodes: each pair gets a GPU of its own, filled node by node. Pure functions.

Spare GPUs (left free so a rollout can start a new pair before the old one lets go of its GPU) take the
slots after the pairs, so they count towards the nodes the pool needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from colo.errors import Problem


@dataclass(frozen=True)
class Placement:
    node: int
    gpu: int  # index of the GPU on its node


def _check(gpus_per_node: int) -> None:
    if gpus_per_node < 1:
        raise ValueError(f"a node needs at least one GPU, not {gpus_per_node}")


def node_count(pairs: int, spare_gpus: int, gpus_per_node: int) -> int:
    _check(gpus_per_node)
    return ceil((pairs + spare_gpus) / gpus_per_node)


def place_pairs(pairs: int, gpus_per_node: int) -> tuple[Placement, ...]:
    """Pair i on slot i: node i // gpus_per_node, GPU i % gpus_per_node."""
    _check(gpus_per_node)
    return tuple(Placement(node=i // gpus_per_node, gpu=i % gpus_per_node) for i in range(pairs))


def node_limit_problems(
    pairs: int, spare_gpus: int, gpus_per_node: int, max_nodes: int | None
) -> list[Problem]:
    needed = node_count(pairs, spare_gpus, gpus_per_node)
    if max_nodes is None or needed <= max_nodes:
        return []
    return [
        Problem(
            "colo:nodePool.maxNodes",
            f"{pairs} pairs + {spare_gpus} spare GPUs need {needed} nodes of {gpus_per_node} GPUs; "
            f"maxNodes is {max_nodes}",
        )
    ]
