"""Pairs onto GPUs onto nodes: each pair gets GPUs of its own on one node, filled node by node. Pure functions.

A pair takes one GPU, or the N GPUs of its LLM's tensor-parallel group, all on one node. The largest pairs are
placed first, each on the first node with room for it: with group sizes that divide the node's GPU count (1, 2,
4, 8 on nodes of 1, 2, 4 or 8) no GPU is stranded between groups. Spare GPUs (left free so a rollout can start a
new pair before the old one lets go of its GPU) take the slots after the pairs, so they count towards the nodes
the pool needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from colo.errors import Problem

# A number of single-GPU pairs, or every pair's GPU count in stack order.
PairSizes = int | Sequence[int]


@dataclass(frozen=True)
class Placement:
    node: int
    gpu: int  # index on its node of the pair's first GPU
    gpus: int = 1  # the pair's GPUs, from `gpu` on

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        return tuple(range(self.gpu, self.gpu + self.gpus))


def _check(gpus_per_node: int) -> None:
    if gpus_per_node < 1:
        raise ValueError(f"a node needs at least one GPU, not {gpus_per_node}")


def _sizes(pairs: PairSizes) -> list[int]:
    return [1] * pairs if isinstance(pairs, int) else list(pairs)


def place_pairs(pairs: PairSizes, gpus_per_node: int) -> tuple[Placement, ...]:
    """Every pair on one node, in stack order; larger pairs are placed first, each on the first node with room.
    Single-GPU pairs alone: pair i on node i // gpus_per_node, GPU i % gpus_per_node."""
    _check(gpus_per_node)
    sizes = _sizes(pairs)
    if any(size > gpus_per_node for size in sizes):
        raise ValueError(f"a pair of {max(sizes)} GPUs does not fit a node of {gpus_per_node}")
    taken: list[int] = []  # GPUs placed per node
    placed: dict[int, Placement] = {}
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        size = sizes[index]
        node = next((n for n, used in enumerate(taken) if used + size <= gpus_per_node), len(taken))
        if node == len(taken):
            taken.append(0)
        placed[index] = Placement(node, taken[node], size)
        taken[node] += size
    return tuple(placed[i] for i in range(len(sizes)))


def node_count(pairs: PairSizes, spare_gpus: int, gpus_per_node: int) -> int:
    _check(gpus_per_node)
    sizes = _sizes(pairs)
    nodes = max((p.node + 1 for p in place_pairs(sizes, gpus_per_node)), default=0)
    beyond = max(0, spare_gpus - (nodes * gpus_per_node - sum(sizes)))
    return nodes + ceil(beyond / gpus_per_node)


def node_limit_problems(
    pairs: PairSizes, spare_gpus: int, gpus_per_node: int, max_nodes: int | None
) -> list[Problem]:
    needed = node_count(pairs, spare_gpus, gpus_per_node)
    if max_nodes is None or needed <= max_nodes:
        return []
    sizes = _sizes(pairs)
    counted = (
        f"{len(sizes)} pairs" if sum(sizes) == len(sizes) else f"{len(sizes)} pairs on {sum(sizes)} GPUs"
    )
    return [
        Problem(
            "colo:nodePool.maxNodes",
            f"{counted} + {spare_gpus} spare GPUs need {needed} nodes of {gpus_per_node} GPUs; "
            f"maxNodes is {max_nodes}",
        )
    ]
