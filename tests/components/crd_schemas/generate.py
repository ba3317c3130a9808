"""Turn a CustomResourceDefinition's openAPIV3Schema into a strict JSON schema the tests validate against.

    python tests/components/crd_schemas/generate.py CRD.yaml > tests/components/crd_schemas/<kind>.json

Descriptions are dropped (size); every object that lists its properties and does not keep unknown fields gets
`additionalProperties: false`, as `kubernetes-validate --strict` does for built-in kinds (the API server would
prune an unknown field silently, which is how a typo goes unnoticed); `apiVersion` and `kind` are pinned; a
case-insensitive Go pattern `^(?i)...` is written `(?i)^...` for Python's re.
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


if __name__ == "__main__":
    path, source = Path(sys.argv[1]), sys.argv[2]
    print(json.dumps(schema(yaml.safe_load(path.read_text()), source), indent=1, sort_keys=True))
