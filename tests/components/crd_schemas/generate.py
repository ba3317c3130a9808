"""Turn a CustomResourceDefinition's openAPIV3Schema into a strict JSON schema the tests validate against.

    python tests/components/crd_schemas/generate.py CRD.yaml > tests/components/crd_schemas/<kind>.json

Descriptions are dropped (size); every object that lists its properties and does not keep unknown fields gets
`additionalProperties: false`, as `kubernetes-validate --strict` does for built-in kinds (the API server would
prune an unknown field silently, which is how a typo goes unnoticed); `apiVersion` and `kind` are pinned; a
case-insensitive Go pattern `^(?i)...` is written `(?i)^...` for Python's re.

Karpenter's CRDs are vendored as CRDs (karpenter/), so the control-plane tests can install them and the API server
applies their CEL rules; their schemas are made from those files when a test asks (crd_schemas.crd_schema):

    python tests/components/crd_schemas/generate.py --vendor CRD.yaml SOURCE > tests/components/crd_schemas/karpenter/<file>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _strict(value) for key, value in node.items() if key != "description"}
    if str(out.get("pattern", "")).startswith("^(?i)"):  # Go's regexp takes the flag there, Python's re first
        out["pattern"] = "(?i)^" + out["pattern"].removeprefix("^(?i)")
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def schema(crd: dict[str, Any], source: str) -> dict[str, Any]:
    spec = crd["spec"]
    (version,) = [v for v in spec["versions"] if v.get("storage")]
    body = _strict(version["schema"]["openAPIV3Schema"])
    group, kind = spec["group"], spec["names"]["kind"]
    body["properties"]["apiVersion"] = {"const": f"{group}/{version['name']}"}
    body["properties"]["kind"] = {"const": kind}
    body["required"] = sorted({*body.get("required", []), "apiVersion", "kind", "metadata", "spec"})
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$comment": source, **body}


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    if isinstance(node, dict):
        return {key: _without_descriptions(value) for key, value in node.items() if key != "description"}
    return node


def vendored(crd: dict[str, Any], source: str) -> str:
    """The CRD as published but for its descriptions (size), with a first line that cites it."""
    body = yaml.safe_dump(_without_descriptions(crd), sort_keys=False, width=200)
    return f"# {source}; descriptions dropped by tests/components/crd_schemas/generate.py --vendor\n{body}"


if __name__ == "__main__":
    if sys.argv[1] == "--vendor":
        path, source = Path(sys.argv[2]), sys.argv[3]
        print(vendored(yaml.safe_load(path.read_text()), source), end="")
    else:
        path, source = Path(sys.argv[1]), sys.argv[2]
        print(json.dumps(schema(yaml.safe_load(path.read_text()), source), indent=1, sort_keys=True))
