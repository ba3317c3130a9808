"""Checks of a valid-looking config against colo's catalogs: settings the catalog shows to be impossible are
an invalid config, reported with the config's other problems (exit code 2) before any planning."""

from __future__ import annotations

from colo.catalog import instance_type
from colo.config.schema import StackConfig
from colo.errors import Problem


def _node_pool_problems(config: StackConfig) -> list[Problem]:
    pool = config.node_pool
    problems = []
    named = pool.mode == "managed" or "instance_type" in pool.model_fields_set
    known = instance_type(pool.instance_type) if named else None
    if known is not None and pool.gpus_per_node is not None and pool.gpus_per_node > known.gpus:
        problems.append(
            Problem(
                "colo:nodePool.gpusPerNode",
                f"{pool.instance_type} has {known.gpus} GPU{'s' if known.gpus != 1 else ''}; {pool.gpus_per_node} "
                "per node would place pairs on GPUs that do not exist. Drop gpusPerNode or lower it",
            )
        )
    return problems


def catalog_problems(config: StackConfig) -> list[Problem]:
    return _node_pool_problems(config)
