"""Checks of a valid-looking config against colo's catalogs: names colo cannot plan for are an invalid config.

A model the catalog lacks (with no `profile`), a GPU it does not know, a vLLM release whose memory rules it
does not mirror, or more GPUs per node than the instance type has: none of these is a plan that does not
fit, so each is reported with the config's other problems (exit code 2), before any planning.
"""

from __future__ import annotations

from colo.catalog import gpu, instance_type
from colo.catalog.models import catalog_ids
from colo.catalog.vllm_rules import rules_for
from colo.config.formats import shown
from colo.config.schema import ServerSpec, StackConfig
from colo.errors import Problem


def _servers(config: StackConfig) -> list[tuple[str, ServerSpec]]:
    found = []
    for index, pair in enumerate(config.pairs):
        for role, server in (("llm", pair.llm), ("embedding", pair.embedding), ("reranker", pair.reranker)):
            if server is not None:
                found.append((f"colo:pairs[{index}].{role}", server))
    return found


def _server_problems(path: str, server: ServerSpec, known_models: set[str]) -> list[Problem]:
    problems = []
    try:
        rules = rules_for(server.vllm.version)
    except ValueError as exc:
        problems.append(Problem(f"{path}.vllm.version", str(exc)))
    else:
        if server.kv_cache_memory_bytes is not None and not rules.has_kv_cache_memory_bytes:
            problems.append(
                Problem(
                    f"{path}.kvCacheMemoryBytes",
                    f"vLLM {server.vllm.version} has no --kv-cache-memory-bytes (added in 0.11.0)",
                )
            )
    if server.profile is None and server.model not in known_models:
        problems.append(
            Problem(
                f"{path}.model",
                f"'{shown(server.model)}' is not in colo's model catalog; set {path}.profile to its config.json, "
                "a model directory, or an s3:// prefix holding config.json",
            )
        )
    return problems


def _node_pool_problems(config: StackConfig) -> list[Problem]:
    pool = config.node_pool
    problems = []
    try:
        gpu(pool.gpu)
    except KeyError as exc:
        problems.append(Problem("colo:nodePool.gpu", str(exc.args[0])))
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
    known_models = set(catalog_ids())
    problems = _node_pool_problems(config)
    for path, server in _servers(config):
        problems += _server_problems(path, server, known_models)
    return problems
