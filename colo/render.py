"""Turn what the program declared under the mock runtime into files: Kubernetes YAML and an AWS summary.

Every Kubernetes object becomes one file a user can `kubectl apply -f DIR/`: names sort namespaces first
and dependants after what they use. The mock runtime hands numbers over as floats; whole ones become
ints again. A Secret's values are never written: each is replaced by a placeholder, with a comment on
how to create the real one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

from colo.mock_run import ProgramRun, Recorded

SECRET_PLACEHOLDER = "REPLACE-ME"
# kubectl applies a directory's files in name order: things others refer to come first.
APPLY_ORDER = [
    "Namespace",
    "ConfigMap",
    "Secret",
    "PersistentVolumeClaim",
    "ResourceClaimTemplate",
    "DaemonSet",
    "Service",
    "Deployment",
]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the scripts, the plugin config) as literal blocks, readable in the file."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


@dataclass(frozen=True)
class Manifest:
    filename: str
    body: dict[str, Any]
    comment: str = ""

    def text(self) -> str:
        header = "".join(f"# {line}\n" for line in self.comment.splitlines())
        return header + yaml.dump(self.body, Dumper=_Dumper, sort_keys=False, width=120)


def plain(value: Any) -> Any:
    """Floats that are whole numbers back to ints; secrets replaced; mapping keys in a stable order."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if is_rpc_secret(value):  # the mock runtime hands secret inputs over still wrapped
        inner = unwrap_rpc_secret(value)
        return (
            dict.fromkeys(sorted(inner), SECRET_PLACEHOLDER)
            if isinstance(inner, dict)
            else SECRET_PLACEHOLDER
        )
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (k not in ("apiVersion", "kind", "metadata", "name"), k))
        return {k: plain(value[k]) for k in keys}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _redact_secret(body: dict[str, Any]) -> str:
    for field in ("data", "stringData"):
        if field in body:
            body[field] = dict.fromkeys(body[field], SECRET_PLACEHOLDER)
    name = body["metadata"]["name"]
    namespace = body["metadata"].get("namespace", "default")
    keys = ", ".join(sorted(body.get("stringData", body.get("data", {}))))
    return (
        f"The values ({keys}) are placeholders: colo never writes secrets to files. Create the real one with\n"
        f"  kubectl -n {namespace} create secret generic {name} --from-literal=token=$HF_TOKEN\n"
        "instead of applying this file."
    )


def kubernetes_object(resource: Recorded) -> Manifest:
    body = plain(resource.inputs)
    kind = body["kind"]
    comment = _redact_secret(body) if kind == "Secret" else ""
    metadata = body["metadata"]
    rank = APPLY_ORDER.index(kind) if kind in APPLY_ORDER else len(APPLY_ORDER)
    scope = metadata.get("namespace", "cluster")
    filename = f"{rank:02d}-{scope}-{kind.lower()}-{metadata['name']}.yaml"
    return Manifest(filename, body, comment)


def is_kubernetes_object(resource: Recorded) -> bool:
    return resource.custom and resource.type.startswith("kubernetes:")


def manifests(run: ProgramRun) -> list[Manifest]:
    found = [kubernetes_object(r) for r in run.mocks.resources if is_kubernetes_object(r)]
    return sorted(found, key=lambda m: m.filename)


def cloud_resources(run: ProgramRun) -> list[dict[str, Any]]:
    """Everything else the program declared (the AWS side), for the summary."""
    others = [r for r in run.mocks.resources if r.custom and not r.type.startswith("kubernetes:")]
    return [
        {"type": r.type, "name": r.name, "inputs": plain(r.inputs)}
        for r in sorted(others, key=lambda r: (r.type, r.name))
    ]


def summary_markdown(stack: str, files: list[str], cloud: list[dict[str, Any]]) -> str:
    lines = [f"# colo render: stack {stack}", "", f"## Kubernetes objects ({len(files)})", ""]
    lines += [f"- `{name}`" for name in files]
    lines += ["", f"## Other resources ({len(cloud)})", ""]
    if not cloud:
        lines.append("None: this stack declares Kubernetes objects only.")
    for resource in cloud:
        lines += [
            f"### {resource['type']} `{resource['name']}`",
            "",
            "```json",
            json.dumps(resource["inputs"], indent=2),
            "```",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def write_render(run: ProgramRun, stack: str, out: Path) -> list[Path]:
    """Write the manifests and summaries into `out`, replacing any earlier render there."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob("*.yaml"), out / "summary.md", out / "summary.json"]:
        stale.unlink(missing_ok=True)
    written = []
    objects = manifests(run)
    for manifest in objects:
        path = out / manifest.filename
        path.write_text(manifest.text())
        written.append(path)
    cloud = cloud_resources(run)
    files = [m.filename for m in objects]
    (out / "summary.json").write_text(
        json.dumps({"stack": stack, "kubernetes_objects": files, "other_resources": cloud}, indent=2) + "\n"
    )
    (out / "summary.md").write_text(summary_markdown(stack, files, cloud))
    return [*written, out / "summary.json", out / "summary.md"]
