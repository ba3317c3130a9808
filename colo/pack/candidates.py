"""The instance types pack may choose: priced in the region, of an allowed family, accepted by the plan's
platform checks, and (for a ReadWriteOnce model volume) holding every pair on one node."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from colo.catalog import InstanceType, gpu, instance_type
from colo.catalog.prices import InstancePrice, priced_regions, region_prices
from colo.errors import ArgumentsError, Problem
from colo.pack.engine import instance_problems, node_allocatable
from colo.pack.packings import Companions, pair_values
from colo.pack.requirements import PackRequest
from colo.pack.solver import NodeType

MIB = 2**20
STORAGE_REASON = (
    "the pairs would span nodes, and a ReadWriteOnce model volume attaches to one node "
    "(colo:storage.accessMode: ReadWriteMany, with a storage class that offers it, EFS say, lifts this)"
)


@dataclass(frozen=True)
class Candidate:
    instance: InstanceType
    price: InstancePrice
    node_type: NodeType

    @property
    def name(self) -> str:
        return self.instance.name

    def lowest_cost(self, request: PackRequest) -> float:
        """The fewest nodes that hold every pair and spare GPU, priced: what this type costs at best."""
        return self.fewest_nodes(request) * self.price.usd_per_hour

    def fewest_nodes(self, request: PackRequest) -> int:
        return ceil((len(request.llms) + request.spare_gpus) / self.instance.gpus)


@dataclass(frozen=True)
class Candidates:
    allowed: tuple[Candidate, ...]  # every priced instance type of an allowed family, cheapest first
    refused: dict[str, str]  # instance type -> the platform check it fails
    single_node_only: frozenset[str]  # types left out only because the volume is ReadWriteOnce

    @property
    def searched(self) -> tuple[Candidate, ...]:
        out = set(self.refused) | self.single_node_only
        return tuple(c for c in self.allowed if c.name not in out)

    @property
    def gpus(self) -> list[str]:
        return sorted({c.instance.gpu for c in self.allowed})


def family(name: str) -> str:
    return name.split(".", 1)[0]


def allowed_prices(request: PackRequest) -> dict[str, InstancePrice]:
    prices = region_prices(request.region)
    if not prices:
        raise ArgumentsError(
            [
                Problem(
                    "region",
                    f"no sourced prices for {request.region}; priced regions: {', '.join(priced_regions())}",
                )
            ]
        )
    if request.families is None:
        return prices
    known = sorted({family(n) for n in prices})
    unknown = [f for f in request.families if f not in known]
    if unknown:
        raise ArgumentsError(
            [
                Problem(
                    "instanceFamilies",
                    f"{', '.join(unknown)}: no instance type of that family has a sourced price in {request.region}; "
                    f"priced there: {', '.join(known)}",
                )
            ]
        )
    return {n: p for n, p in prices.items() if family(n) in request.families}


def _node_type(instance: InstanceType, price: InstancePrice) -> NodeType:
    cpu, memory = node_allocatable(instance)
    return NodeType(
        instance.name,
        instance.gpu,
        instance.gpus,
        price.usd_per_hour,
        round(gpu(instance.gpu).cuda_total_mib),
        cpu,
        memory // MIB,
    )


def _platform_reason(request: PackRequest, instance: InstanceType) -> str | None:
    llm = request.llms[0]
    values = {
        **request.planning_base(),
        "nodePool": {**request.base.get("nodePool", {}), "gpu": instance.gpu, "instanceType": instance.name},
        "pairs": [pair_values(request, llm, Companions(0, None), llm.server)],
    }
    problems = instance_problems(values)
    return str(problems[0]) if problems else None


def spans_nodes_on_one_volume(request: PackRequest, instance: InstanceType) -> bool:
    access = request.base.get("storage", {}).get("accessMode", "ReadWriteOnce")
    return access == "ReadWriteOnce" and len(request.llms) > instance.gpus


def candidates(request: PackRequest) -> Candidates:
    allowed, refused, single = [], {}, set()
    for name, price in sorted(allowed_prices(request).items(), key=lambda item: item[1].usd_per_hour):
        instance = instance_type(name)
        if instance is None:  # the price catalog's loader refuses such entries
            continue
        allowed.append(Candidate(instance, price, _node_type(instance, price)))
        reason = _platform_reason(request, instance)
        if reason is not None:
            refused[name] = reason
        elif spans_nodes_on_one_volume(request, instance):
            single.add(name)
    return Candidates(tuple(allowed), refused, frozenset(single))
