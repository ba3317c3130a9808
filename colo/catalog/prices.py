"""On-demand prices of the catalog's instance types, by region (instance_prices.yaml), each with its source.

Only instance types the instance-type catalog knows are accepted, so a price can never describe hardware
colo cannot plan for; a region or instance type without a sourced price has no entry rather than a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from colo.catalog import instance_type
from colo.catalog.data import parse_yaml


@dataclass(frozen=True)
class InstancePrice:
    instance_type: str
    region: str
    usd_per_hour: float
    source: str  # where the figure was read
    date: str  # when its table was generated (ISO date)


def parse_prices(data: Mapping[str, Any]) -> dict[str, dict[str, InstancePrice]]:
    """region -> instance type -> price; refuses instance types the catalog lacks and non-positive prices."""
    table: dict[str, dict[str, InstancePrice]] = {}
    for region, entry in data["regions"].items():
        prices: dict[str, InstancePrice] = {}
        for name, usd in entry["usd_per_hour"].items():
            if instance_type(name) is None:
                raise ValueError(f"{region}: {name} is not in instance_types.yaml")
            if not float(usd) > 0:
                raise ValueError(f"{region}: {name} has no positive price ({usd})")
            prices[name] = InstancePrice(name, region, float(usd), str(entry["source"]), str(entry["date"]))
        table[str(region)] = prices
    return table


@cache
def _prices() -> dict[str, dict[str, InstancePrice]]:
    text = resources.files("colo.catalog").joinpath("instance_prices.yaml").read_text()
    return parse_prices(parse_yaml(text))


def priced_regions() -> list[str]:
    return sorted(_prices())


def region_prices(region: str) -> dict[str, InstancePrice]:
    """Every priced instance type of one region (empty for a region without sourced prices)."""
    return dict(_prices().get(region, {}))


def price(region: str, name: str) -> InstancePrice | None:
    return _prices().get(region, {}).get(name)
