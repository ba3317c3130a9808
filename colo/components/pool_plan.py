"""The plan a capacity component (GpuNodePool, KarpenterNodePool) declares from: the stack's, where the program
planned it already, else one made here from the component's stack pieces, as `colo plan` would make it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypedDict

from colo.config import assemble_stack_config
from colo.config.schema import Budget, Cluster, NodePool, Pair, StackConfig, Storage
from colo.errors import InfeasiblePlanError
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader


class StackPieces(Protocol):
    """The stack's pieces a capacity component is given (read-only, as its frozen args hold them)."""

    @property
    def pairs(self) -> Sequence[Pair]: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def node_pool(self) -> NodePool: ...
    @property
    def storage(self) -> Storage: ...
    @property
    def budget(self) -> Budget: ...
    @property
    def hub_token(self) -> str | None: ...
    @property
    def project_dir(self) -> Path | None: ...


class StackPieceArgs(TypedDict):
    """The StackPieces of a stack config, as keyword arguments of a capacity component's args."""

    pairs: Sequence[Pair]
    cluster: Cluster
    node_pool: NodePool
    storage: Storage
    budget: Budget
    hub_token: str | None
    project_dir: Path | None


def stack_pieces(config: StackConfig) -> StackPieceArgs:
    """The pieces of `config` a capacity component plans from (colo's own program declares its capacity so)."""
    return StackPieceArgs(
        pairs=config.pairs,
        cluster=config.cluster,
        node_pool=config.node_pool,
        storage=config.storage,
        budget=config.budget,
        hub_token=config.hub_token.get_secret_value() if config.hub_token else None,
        project_dir=config.project_dir,
    )


def feasible_plan(pieces: StackPieces, plan: Plan | None) -> Plan:
    """`plan`, or the plan of `pieces`; an InfeasiblePlanError where it does not fit."""
    if plan is None:
        config = assemble_stack_config(
            cluster=pieces.cluster,
            node_pool=pieces.node_pool,
            storage=pieces.storage,
            budget=pieces.budget,
            pairs=list(pieces.pairs),
            hub_token=pieces.hub_token,
            project_dir=pieces.project_dir,
        )
        plan = make_plan(config, s3_profile=s3_profile_reader(config))
    if not plan.feasible:
        raise InfeasiblePlanError(list(plan.problems))
    return plan


def argument_path(path: str) -> str:
    """A stack config path as the component's argument names it: `colo:nodePool.mode` -> `nodePool.mode`."""
    return path.removeprefix("colo:")
