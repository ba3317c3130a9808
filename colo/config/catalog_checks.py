"""Checks of a valid-looking config against colo's catalogs: names colo cannot plan for are an invalid config.

A model neither the catalog nor the Hugging Face Hub can give (with no `profile`), a profile file that cannot be
read, a GPU colo does not know, a vLLM release whose memory rules it does not mirror, or more GPUs per node than
the instance type has: none of these is a plan that does not fit, so each is reported with the config's other
problems (exit code 2), before any planning. A model read from the Hub here is read once: the plan reuses it.
"""

from __future__ import annotations

from pathlib import Path

from colo.catalog import GpuLookupError, instance_type, resolve_gpu
from colo.config.calibration import calibration_problem  # the reader the plan applies, bounded like a profile
from colo.config.schema import ServerSpec, StackConfig
from colo.echo import shown
from colo.errors import Problem
from colo.vllm import HubError, architecture_from_path, kv_cache_memory_bytes_missing, named_model, rules_for


def _servers(config: StackConfig) -> list[tuple[str, ServerSpec]]:
    found = []
    for index, pair in enumerate(config.pairs):
        for role, server in pair.servers_in_start_order():
            found.append((f"colo:pairs[{index}].{role}", server))
    return found


def _local_profile_problem(profile: str, model: str, root: Path | None) -> str | None:
    """Why a profile on disk cannot be read (missing, not a regular file, not a config.json); read once here
    so that a path mistake is an invalid config. s3:// profiles are read when planning, with AWS access.
    A relative path is read from `root` (the project directory), else the working directory, as the plan
    reads it."""
    try:
        architecture_from_path((root or Path.cwd()) / profile, model)
    except (OSError, ValueError) as exc:
        return f"cannot read the architecture from {shown(profile)}: {exc}"
    return None


def _server_problems(path: str, server: ServerSpec, root: Path | None, token: str | None) -> list[Problem]:
    problems = []
    try:
        rules = rules_for(server.vllm.rules_version)
    except ValueError as exc:
        problems.append(Problem(f"{path}.vllm.version", str(exc)))
    else:
        missing = kv_cache_memory_bytes_missing(rules, server.vllm.rules_version)
        if server.kv_cache_memory_bytes is not None and missing:
            problems.append(Problem(f"{path}.kvCacheMemoryBytes", missing))
    if server.profile is not None and not server.profile.startswith("s3://"):
        problem = _local_profile_problem(server.profile, server.model, root)
        if problem:
            problems.append(Problem(f"{path}.profile", problem))
    if server.profile is None:
        try:
            named_model(server.model, server.revision, token=token)
        except HubError as exc:
            problems.append(Problem(f"{path}.{exc.about}", exc.args[0]))
    return problems


def _node_pool_problems(config: StackConfig) -> list[Problem]:
    pool = config.node_pool
    problems = []
    try:
        resolve_gpu(pool.named_gpu, pool.gpu_memory_mib, pool.gpu_compute_capability)
    except GpuLookupError as exc:
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


def _calibration_problems(config: StackConfig) -> list[Problem]:
    problem = calibration_problem(config.budget.calibration)
    return [Problem("colo:budget.calibration", problem)] if problem else []


def catalog_problems(config: StackConfig) -> list[Problem]:
    token = config.hub_token.get_secret_value() if config.hub_token else None
    problems = _node_pool_problems(config) + _calibration_problems(config)
    for path, server in _servers(config):
        problems += _server_problems(path, server, config.project_dir, token)
    return problems
