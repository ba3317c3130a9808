"""The one door from `colo pack` into colo's planning engine.

Every candidate is judged the way `colo plan` judges a stack: its values are parsed by the stack schema
(`parse_stack_config`) and planned by `make_plan`, and pack reads back only the figures below. When the
planning API changes, this module is the one to follow it; nothing else in colo.pack imports colo.plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from colo.catalog import InstanceType
from colo.config import parse_stack_config
from colo.errors import Problem
from colo.plan.pair import PairPlan
from colo.plan.platform import platform_problems
from colo.plan.resources import (
    NODE_RESERVED_FRACTION_MEMORY,
    NODE_RESERVED_MILLICPU,
    memory_bytes,
    millicpu,
)
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.profiles import s3_profile_reader
from colo.roles import Role
from colo.vllm import SMALL_CAPTURE_SIZES

MIB = 2**20


@dataclass(frozen=True)
class ServerFigures:
    """One server as the plan sizes it: what vLLM will log, and what its pod requests of the node."""

    role: Role
    model: str
    has_kv_cache: bool  # False for encoder-only models: vLLM sizes no KV pool for them
    kv_tokens: int  # "GPU KV cache size: N tokens"
    concurrency: float  # "Maximum concurrency for N tokens per request"
    max_num_seqs: int
    graphs: str  # "default" (the release's capture sizes), "sizes" (a shorter list) or "eager"
    graph_decision: str  # the plan's words for it, and why
    cpu_millis: int
    memory_bytes: int
    footprint_mib: int  # what nvidia-smi attributes to it once it serves
    gpu: int | None = 0  # which of the pair's GPUs it runs on; None: the LLM over every GPU of its group


@dataclass(frozen=True)
class PairCheck:
    """One pair on its GPU (or the GPUs of its LLM's group): whether every startup check passes with the safety
    margin, and its figures."""

    problems: tuple[Problem, ...]
    servers: tuple[ServerFigures, ...]  # in start order; empty when the pair could not be sized at all
    used_mib: int  # predicted nvidia-smi used (of the fullest GPU of a group)
    free_mib: int
    # what the servers started before the LLM hold where it starts: on the fullest GPU of a group
    companions_mib: int = 0
    gpus: int = 1  # the LLM's tensor-parallel group size
    group_used_mib: int = 0  # predicted used over every GPU of the pair
    node: int = 0  # where the stack's plan placed the pair
    node_gpus: tuple[int, ...] = (0,)

    @property
    def feasible(self) -> bool:
        return not self.problems and bool(self.servers)

    @property
    def llm(self) -> ServerFigures:
        return next(s for s in self.servers if s.role == Role.LLM)

    @property
    def cpu_millis(self) -> int:
        return sum(s.cpu_millis for s in self.servers)

    @property
    def memory_bytes(self) -> int:
        return sum(s.memory_bytes for s in self.servers)


@dataclass(frozen=True)
class StackCheck:
    problems: tuple[Problem, ...]
    pairs: dict[str, PairCheck]
    node_count: int
    gpus_per_node: int

    @property
    def feasible(self) -> bool:
        return not self.problems


def _figures(server: Server, gpu: int | None = 0) -> ServerFigures:
    budget = server.memory_plan.budget
    capacity = budget.capacity
    return ServerFigures(
        role=server.role,
        model=server.model,
        has_kv_cache=capacity is not None,
        kv_tokens=capacity.tokens if capacity else 0,
        concurrency=capacity.max_concurrency if capacity else 0.0,
        max_num_seqs=budget.spec.limits.max_num_seqs,
        graphs="eager"
        if budget.spec.enforce_eager
        else "default"
        if budget.spec.capture_sizes is None
        else "sizes",
        graph_decision=server.memory_plan.graph_decision,
        cpu_millis=millicpu(server.cpu),
        memory_bytes=memory_bytes(server.memory),
        footprint_mib=round(budget.footprint_bytes / MIB),
        gpu=gpu,
    )


def _pair_check(pair: PairPlan | None, problems: tuple[Problem, ...]) -> PairCheck:
    if pair is None:
        return PairCheck(problems, (), 0, 0)
    gpu_plan = pair.gpu_plan
    gpu_plans = pair.group.gpus if pair.group else (pair.gpu_plan,)
    companions = max(sum(s.budget.footprint_bytes for s in g.servers[:-1]) for g in gpu_plans)
    return PairCheck(
        problems,
        tuple(
            _figures(s, None if s.role == Role.LLM else gpu)
            for s, gpu in zip(pair.servers, (*pair.group.companion_gpus, None), strict=True)
        )
        if pair.group
        else tuple(_figures(s) for s in pair.servers),
        round(gpu_plan.used_bytes / MIB),
        round(gpu_plan.free_bytes / MIB),
        round(companions / MIB),
        pair.gpu_count,
        sum(round(g.used_bytes / MIB) for g in gpu_plans),
        pair.placement.node,
        pair.placement.gpu_indices,
    )


def _plan(values: Mapping[str, Any], aws_region: str | None) -> Plan:
    """The same two steps as `colo plan`: the schema's parse (ConfigError on invalid values), then the plan."""
    config = parse_stack_config(values, aws_region=aws_region)
    return make_plan(config, s3_profile=s3_profile_reader(config))


@lru_cache(maxsize=65536)
def _check_pair_cached(pair_json: str, gpu: str, base_json: str) -> PairCheck:
    base = json.loads(base_json)
    pair = json.loads(pair_json)
    values = {
        **base,
        # Only the GPU matters for one pair's budget (and a node as wide as its LLM's group); the node checks
        # wait for the whole layout, which also knows the instance type's interconnect.
        "nodePool": {"mode": "existing", "gpu": gpu, "gpusPerNode": pair["llm"].get("tensorParallelSize", 1)},
        "pairs": [pair],
    }
    plan = _plan(values, None)
    return _pair_check(plan.pairs[0] if plan.pairs else None, plan.problems)


def check_pair(pair: Mapping[str, Any], gpu: str, base: Mapping[str, Any]) -> PairCheck:
    """One pair (stack-file values of `colo:pairs[]`) alone on one GPU of the catalog (on as many as its LLM's
    tensorParallelSize), with the stack's cluster, storage and budget (`base`). Cached: the same pair on the same
    GPU is planned once."""
    return _check_pair_cached(json.dumps(pair, sort_keys=True), gpu, json.dumps(base, sort_keys=True))


@lru_cache(maxsize=1024)
def _check_stack_cached(values_json: str, aws_region: str | None) -> StackCheck:
    plan = _plan(json.loads(values_json), aws_region)
    pairs = {p.name: _pair_check(p, tuple(p.gpu_plan.problems)) for p in plan.pairs}
    return StackCheck(tuple(plan.problems), pairs, plan.node_count, plan.gpus_per_node)


def check_stack(values: Mapping[str, Any], aws_region: str | None) -> StackCheck:
    """A whole stack (the `colo:` values of a stack file), planned exactly as `colo plan` plans it. Cached:
    the solver offers the same layout again while it looks for alternatives."""
    return _check_stack_cached(json.dumps(values, sort_keys=True), aws_region)


def instance_problems(values: Mapping[str, Any]) -> tuple[Problem, ...]:
    """What the platform checks refuse for a stack's node pool and cluster, whatever its pairs."""
    return tuple(platform_problems(parse_stack_config(values)))


def node_allocatable(instance: InstanceType) -> tuple[int, int]:
    """CPU (millicores) and memory (bytes) one node offers pods, as the plan's node-fit check counts them."""
    cpu = instance.vcpus * 1000 - NODE_RESERVED_MILLICPU
    memory = int(instance.memory_mib * MIB * (1 - NODE_RESERVED_FRACTION_MEMORY))
    return cpu, memory


def reduced_capture_sizes(max_num_seqs: int) -> list[int]:
    """The capture sizes the plan falls back to before eager mode, for a server with `max_num_seqs`."""
    return [s for s in SMALL_CAPTURE_SIZES if s <= max_num_seqs]
