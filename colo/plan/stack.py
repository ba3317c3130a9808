"""The whole stack's plan: every pair sized on its GPU, placed on a node, with flags and probe budgets.

Pure: no Pulumi, no cloud calls. Architectures come from colo's catalog or from files; an s3:// profile is
read through the `s3_profile` callable the caller passes in (the CLI and the program pass boto3's). Each
pair is planned by colo.plan.pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from colo.catalog import GpuLookupError, GpuSpec, InstanceType, instance_type, resolve_gpu
from colo.config.calibration import calibration_problem
from colo.config.schema import StackConfig
from colo.errors import Problem
from colo.plan.assumed_rules import assumed_rules_warnings
from colo.plan.capacity import capacity_problems
from colo.plan.compute_sharing import daemon_slices, sharing_problems
from colo.plan.hub_access import hub_access_warnings
from colo.plan.monitoring import observability_warnings, scrape_warnings
from colo.plan.pair import GroupLinks, PairPlan, S3Profile, plan_pair
from colo.plan.placement import node_count, node_limit_problems, place_pairs
from colo.plan.platform import gpus_per_node, instance_type_known, platform_problems, uses_native_sidecars
from colo.plan.resources import node_fit_problems
from colo.plan.scheduling import (
    DevicePluginPlan,
    device_plugin,
    device_plugin_problems,
    gpu_tolerations,
    node_selector,
)


@dataclass(frozen=True)
class Plan:
    config: StackConfig
    gpu: GpuSpec
    pairs: tuple[PairPlan, ...]
    gpus_per_node: int
    node_count: int
    native_sidecars: bool
    problems: tuple[Problem, ...]
    node_selector: dict[str, str]  # what every GPU pod selects
    tolerations: tuple[dict[str, str], ...]  # what every GPU pod tolerates
    device_plugin: DevicePluginPlan | None  # None: DRA, or the node image brings its own plugin
    warnings: tuple[Problem, ...] = ()  # worth a look before deploying, but no reason to refuse

    @property
    def feasible(self) -> bool:
        return not self.problems


def make_plan(
    config: StackConfig,
    *,
    s3_profile: S3Profile | None = None,
    gpu_override: GpuSpec | None = None,
    device_plugin_checks: bool = True,
) -> Plan:
    """Plan every pair. Problems are collected, never raised, so `colo plan` can show them all.

    `device_plugin_checks=False` plans a pair declared on its own (colo.components.ColocatedPair): who runs
    the device plugin, and how many slices it offers, is then said where the plugin is declared."""
    problems = platform_problems(config) + (device_plugin_problems(config) if device_plugin_checks else [])
    problems += sharing_problems(config)
    if (unusable := calibration_problem(config.budget.calibration)) is not None:
        problems.append(Problem("colo:budget.calibration", unusable))
    selector, tolerations = node_selector(config), gpu_tolerations()
    pool = config.node_pool
    try:
        gpu_spec = gpu_override or resolve_gpu(
            pool.named_gpu, pool.gpu_memory_mib, pool.gpu_compute_capability
        )
    except GpuLookupError as exc:
        return Plan(
            config,
            GpuSpec(name="unknown", cuda_total_bytes=0, context_bytes=0, cublas_bytes=0, from_catalog=False),
            (),
            1,
            0,
            False,
            (*problems, Problem("colo:nodePool.gpu", str(exc.args[0]))),
            node_selector=selector,
            tolerations=tolerations,
            device_plugin=None,
        )
    per_node = gpus_per_node(config) or 1
    native = uses_native_sidecars(config)
    instance = instance_type(pool.instance_type) if instance_type_known(config) else None
    problems += group_size_problems(config, per_node)
    sizes = [min(pair.tensor_parallel_size, per_node) for pair in config.pairs]  # oversize: refused above
    nodes = node_count(sizes, pool.spare_gpus, per_node)
    problems += node_limit_problems(sizes, pool.spare_gpus, per_node, pool.max_nodes)
    pairs: list[PairPlan] = []
    placements = place_pairs(sizes, per_node)
    links = group_links(instance)
    pods_by_node: dict[int, list[tuple[str, Sequence[tuple[str, str, str]]]]] = {}
    for index, (pair, placement) in enumerate(zip(config.pairs, placements, strict=True)):
        pair_plan, pair_problems = plan_pair(
            pair, index, config, gpu_spec, placement, native, s3_profile, links
        )
        problems += pair_problems
        if pair_plan is not None:
            pairs.append(pair_plan)
            requests = [(s.role, s.cpu, s.memory) for s in pair_plan.servers]
            pods_by_node.setdefault(placement.node, []).append((f"colo:pairs[{index}]", requests))
    problems += node_problems(config, instance, pods_by_node)
    problems += capacity_problems(config, gpu_spec, per_node, pairs)
    # A shared GPU offers as many time-slices as the largest pair has servers (and its MPS daemon, if in the pod).
    servers_per_gpu = max((len(pair.servers) for pair in pairs), default=0) + daemon_slices(config)
    plugin = device_plugin(config, servers_per_gpu)
    return Plan(
        config,
        gpu_spec,
        tuple(pairs),
        per_node,
        nodes,
        native,
        tuple(problems),
        node_selector=selector,
        tolerations=tolerations,
        device_plugin=plugin,
        warnings=(
            *assumed_rules_warnings(config),
            *hub_access_warnings(config, pairs),
            *interconnect_warnings(config, instance),
            *gpus_per_node_warnings(config),
            *observability_warnings(config, plugin),
            *scrape_warnings(config),
        ),
    )


def node_problems(
    config: StackConfig,
    instance: InstanceType | None,
    pods_by_node: dict[int, list[tuple[str, Sequence[tuple[str, str, str]]]]],
) -> list[Problem]:
    """What the nodes the pairs landed on cannot give them: one volume across nodes, CPU or memory."""
    problems: list[Problem] = []
    used_nodes = len(pods_by_node)
    if used_nodes > 1 and config.storage.access_mode == "ReadWriteOnce":
        problems.append(
            Problem(
                "colo:storage.accessMode",
                f"the pairs run on {used_nodes} nodes, but a ReadWriteOnce volume attaches to one node only; use "
                f"ReadWriteMany or ReadOnlyMany with a storage class that supports it (EFS, say)",
            )
        )
    if instance is not None:
        for pods in pods_by_node.values():
            problems += node_fit_problems(instance, pods)
    return problems


def group_links(instance: InstanceType | None) -> GroupLinks:
    """How a node's GPUs reach one another, from the instance catalog: NVSwitch boards join every pair by NVLink,
    the other types by PCIe. An unknown node is taken as NVLink without NVSwitch: vLLM's custom all-reduce buffers
    counted, NCCL's NVLink SHARP buffers not."""
    if instance is None:
        return GroupLinks()
    return GroupLinks(nvswitch=instance.nvswitch, nvlink=instance.nvswitch)


def group_size_problems(config: StackConfig, per_node: int) -> list[Problem]:
    """A tensor-parallel LLM's group must fit one node, whose GPU count colo must know."""
    problems: list[Problem] = []
    known = gpus_per_node(config) is not None
    for index, pair in enumerate(config.pairs):
        size = pair.tensor_parallel_size
        if size == 1:
            continue
        path = f"colo:pairs[{index}].llm.tensorParallelSize"
        if not known:
            problems.append(
                Problem(
                    path,
                    f"{size} GPUs on one node, but colo does not know how many GPUs a node of "
                    f"{config.node_pool.instance_type} has; set nodePool.gpusPerNode (or an instance type of its "
                    f"catalog)",
                )
            )
        elif size > per_node:
            problems.append(
                Problem(
                    path,
                    f"{size} GPUs, but a node of {config.node_pool.instance_type} has {per_node}: colo runs a "
                    f"tensor-parallel group on one node; choose an instance type with {size} or more GPUs, or a "
                    f"smaller tensorParallelSize",
                )
            )
    return problems


def gpus_per_node_warnings(config: StackConfig) -> list[Problem]:
    """Nodes of an instance type nobody named, with no GPU count either: the plan places pairs one node per GPU
    it assumes (the schema's default instance type has one), which the user's nodes may not be."""
    pool = config.node_pool
    if instance_type_known(config) or pool.gpus_per_node is not None:
        return []
    return [
        Problem(
            "colo:nodePool.gpusPerNode",
            "neither nodePool.instanceType nor gpusPerNode is set, so the plan assumes 1 GPU per node when it "
            "places pairs and counts nodes; set gpusPerNode (or the instance type) to what your nodes hold",
        )
    ]


def interconnect_warnings(config: StackConfig, instance: InstanceType | None) -> list[Problem]:
    """A tensor-parallel LLM on nodes whose instance type colo does not know: its interconnect is assumed."""
    if instance is not None or all(pair.tensor_parallel_size == 1 for pair in config.pairs):
        return []
    return [
        Problem(
            "colo:nodePool.instanceType",
            "colo does not know how the GPUs of these nodes reach one another, which sizes the tensor-parallel "
            "communicators; it assumes NVLink between every pair of GPUs without NVSwitch (vLLM's custom "
            "all-reduce buffers counted, NCCL's NVLink SHARP buffers not). Name an instance type of colo's "
            "catalog to have it known",
        )
    ]
