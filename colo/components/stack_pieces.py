"""The stack schema's pieces a component is given, put together as the stack file they describe and read as
`colo plan` reads one, so a component checks and plans exactly what a stack with those keys would."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from colo.config import parse_stack_config
from colo.config.schema import Budget, Cluster, Network, NodePool, StackConfig, Storage


def written(piece: BaseModel) -> dict[str, Any]:
    """A schema piece as a stack file would hold it: only what was set, by its stack key."""
    return piece.model_dump(by_alias=True, exclude_unset=True)


def stack_config(
    *,
    cluster: Cluster,
    node_pool: NodePool,
    storage: Storage,
    budget: Budget,
    pairs: Sequence[Mapping[str, Any]],
    network: Network | None = None,
    hub_token: str | None = None,
    aws_region: str | None = None,
    project_dir: Path | None = None,
) -> StackConfig:
    """The stack config of these pieces and pairs (as a stack file holds them), validated as a stack file is;
    raises ConfigError naming `colo:` paths. The keywords after `network` are what parse_stack_config takes
    from outside the stack file."""
    raw: dict[str, Any] = {
        "cluster": written(cluster),
        "nodePool": written(node_pool),
        "storage": written(storage),
        "budget": written(budget),
        "pairs": list(pairs),
    }
    if network is not None:
        raw["network"] = written(network)
    return parse_stack_config(raw, aws_region=aws_region, project_dir=project_dir, hub_token=hub_token)
