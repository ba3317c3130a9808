"""JSON schemas of the Prometheus operator's PodMonitor and PrometheusRule, generated from its CRDs (each
file's `$comment` cites the CRD and tag; generate.py says how), and validation against them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).parent
API_GROUP = "monitoring.coreos.com/"


@cache
def crd_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / f"{kind}.json").read_text())
    return schema


def is_custom_resource(body: dict[str, Any]) -> bool:
    return str(body.get("apiVersion", "")).startswith(API_GROUP)


def assert_valid_custom_resource(body: dict[str, Any]) -> None:
    """Raises jsonschema.ValidationError naming the path of the first field the CRD rejects."""
    jsonschema.validate(body, crd_schema(body["kind"]))
