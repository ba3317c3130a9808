"""JSON schemas of the custom resources colo declares, and validation against them: the Prometheus operator's
PodMonitor and PrometheusRule (generated from its CRDs; each file's `$comment` cites the CRD and tag) and
Karpenter's NodePool and EC2NodeClass (made from the CRDs vendored under karpenter/, each citing its source;
generate.py says how both are made)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.components.crd_schemas.generate import schema

SCHEMAS = Path(__file__).parent
KARPENTER_CRDS = SCHEMAS / "karpenter"
# The Karpenter release the vendored CRDs come from (colo.plan.capacity.KARPENTER_VERSION pins the same).
KARPENTER_CRD_VERSION = "1.14.1"
API_GROUPS = ("monitoring.coreos.com/", "karpenter.sh/", "karpenter.k8s.aws/")


def karpenter_crds() -> list[dict[str, Any]]:
    """The vendored Karpenter CRDs, as an API server installs them."""
    return [yaml.safe_load(path.read_text()) for path in sorted(KARPENTER_CRDS.glob("*.yaml"))]


def _vendored_source(path: Path) -> str:
    return path.read_text().splitlines()[0].removeprefix("# ")


@cache
def crd_schema(kind: str) -> dict[str, Any]:
    generated = SCHEMAS / f"{kind}.json"
    if generated.is_file():
        found: dict[str, Any] = json.loads(generated.read_text())
        return found
    for path in sorted(KARPENTER_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            return schema(crd, _vendored_source(path))
    raise KeyError(f"no CRD schema for kind {kind}")


def is_custom_resource(body: dict[str, Any]) -> bool:
    return str(body.get("apiVersion", "")).startswith(API_GROUPS)


def assert_valid_custom_resource(body: dict[str, Any]) -> None:
    """Raises jsonschema.ValidationError naming the path of the first field the CRD rejects."""
    jsonschema.validate(body, crd_schema(body["kind"]))
