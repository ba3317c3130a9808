"""On-demand prices: every figure sourced and dated, only for instance types colo can plan, and no guesses."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pytest
import yaml

from colo.catalog import instance_type
from colo.catalog.prices import parse_prices, price, priced_regions, region_prices

RAW: dict[str, Any] = yaml.safe_load(
    resources.files("colo.catalog").joinpath("instance_prices.yaml").read_text()
)


def test_every_region_names_a_public_source_and_the_date_of_its_table() -> None:
    for region, entry in RAW["regions"].items():
        assert str(entry["source"]).startswith("https://"), region
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(entry["date"])), region


def test_every_price_is_positive_and_for_an_instance_type_the_catalog_knows() -> None:
    for region in priced_regions():
        prices = region_prices(region)
        assert prices, region
        for name, entry in prices.items():
            assert instance_type(name) is not None
            assert entry.usd_per_hour > 0
            assert entry.region == region


def test_a_price_for_an_instance_type_the_catalog_lacks_is_refused() -> None:
    bad = {
        "regions": {
            "us-east-1": {
                "source": "https://example.org",
                "date": "2026-01-01",
                "usd_per_hour": {"x9.huge": 1.0},
            }
        }
    }
    with pytest.raises(ValueError, match=r"x9\.huge is not in instance_types\.yaml"):
        parse_prices(bad)


def test_a_price_of_zero_is_refused() -> None:
    bad = {
        "regions": {
            "us-east-1": {
                "source": "https://example.org",
                "date": "2026-01-01",
                "usd_per_hour": {"g6e.xlarge": 0},
            }
        }
    }
    with pytest.raises(ValueError, match="no positive price"):
        parse_prices(bad)


def test_an_instance_type_without_a_sourced_price_has_none_rather_than_a_guess() -> None:
    # p5e.48xlarge is in the instance-type catalog, but the source lists no us-east-1 price for it.
    assert instance_type("p5e.48xlarge") is not None
    assert price("us-east-1", "p5e.48xlarge") is None
    assert region_prices("eu-nowhere-1") == {}


def test_prices_carry_their_region_s_source_and_date() -> None:
    entry = price("us-east-1", "g6e.xlarge")
    assert entry is not None
    assert (entry.source, entry.date) == (
        RAW["regions"]["us-east-1"]["source"],
        RAW["regions"]["us-east-1"]["date"],
    )
