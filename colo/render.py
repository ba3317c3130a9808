"""Turn what the program declared under the mock runtime into files: Kubernetes YAML and a summary.

The output directory holds `manifests/`, the apply directory: one file per Kubernetes object, nothing
else, so `kubectl apply -f OUT/manifests/` works on its own. Names sort namespaces first and dependants
after what they use. Secrets are never written: applying a placeholder would overwrite the real value, so
each is left out and the summary (and the command's output) gives the `kubectl create secret` command
that makes it; the pods refer to it by name. The summaries (`summary.md`, `summary.json`: every object,
the secrets to create, the AWS resources) sit beside `manifests/`, never in it.

The mock runtime hands numbers over as floats; whole ones become ints again. A value known only after
deploy (in a preview, e.g. an IAM role's name) is shown as UNKNOWN_PLACEHOLDER in the summaries.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pulumi import contains_unknowns

from colo.errors import Problem, UsageError
from colo.mock_run import ProgramRun, Recorded
from colo.output_dir import replace_directory

# The mock runtime hands a secret input over as the engine's wire format carries it: an object marked by
# these two values (Pulumi's property encoding, sdk/go/common/resource/sig/sig.go: Key and Secret, the same
# for every provider and language SDK), the value under "value".
SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270"

APPLY_DIR = "manifests"
SECRET_PLACEHOLDER = "REPLACE-ME"
UNKNOWN_PLACEHOLDER = "(known after deploy)"
# kubectl applies a directory's files in name order: things others refer to come first.
APPLY_ORDER = [
    "Namespace",
    "ConfigMap",
    "Secret",
    "NetworkPolicy",
    "PersistentVolumeClaim",
    "ResourceClaimTemplate",
    "DaemonSet",
    "Service",
    "Deployment",
]


# libyaml's emitter, where PyYAML was built with it (every wheel on PyPI is): a fifth of the time of the
# pure-Python one on a stack's objects, the same text for them (it folds a long escaped string elsewhere).
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):  # type: ignore[misc, valid-type]
    """Multi-line strings (the scripts, the plugin config) as literal blocks, readable in the file."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


@dataclass(frozen=True)
class Manifest:
    filename: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    def text(self) -> str:
        return yaml.dump(self.body, Dumper=_Dumper, sort_keys=False, width=120)


@dataclass(frozen=True)
class SecretToCreate:
    """A Secret the pods read by name, which render leaves for the user to create."""

    namespace: str
    name: str
    keys: tuple[str, ...]

    def variable(self, key: str) -> str:
        """The shell variable the command reads the value from: hf-token -> HF_TOKEN."""
        base = self.name.upper().replace("-", "_")
        return base if len(self.keys) == 1 else f"{base}_{key.upper().replace('-', '_')}"

    @property
    def command(self) -> str:
        literals = " ".join(f'--from-literal={key}="${self.variable(key)}"' for key in self.keys)
        return f"kubectl -n {self.namespace} create secret generic {self.name} {literals}"


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SIGNATURE_KEY) == SECRET_SIGNATURE


def plain(value: Any) -> Any:
    """Floats that are whole numbers back to ints; secrets and unknowns replaced; keys in a stable order."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if is_secret(value):
        inner = value.get("value")
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
    if contains_unknowns(value):  # a value known only after deploy, in a preview
        return UNKNOWN_PLACEHOLDER
    return value


def kubernetes_object(resource: Recorded) -> Manifest:
    if contains_unknowns(resource.inputs):
        raise UsageError(
            [
                Problem(
                    f"{resource.type} {resource.name}",
                    "depends on a value known only after deploy, so no file could be applied as it is; "
                    "render without --preview",
                )
            ]
        )
    body = plain(resource.inputs)
    kind = body["kind"]
    if kind == "Secret":
        for field in ("data", "stringData"):
            if field in body:
                body[field] = dict.fromkeys(body[field], SECRET_PLACEHOLDER)
    metadata = body["metadata"]
    rank = APPLY_ORDER.index(kind) if kind in APPLY_ORDER else len(APPLY_ORDER)
    scope = metadata.get("namespace", "cluster")
    filename = f"{rank:02d}-{scope}-{kind.lower()}-{metadata['name']}.yaml"
    return Manifest(filename, body)


def is_kubernetes_object(resource: Recorded) -> bool:
    return resource.custom and resource.type.startswith("kubernetes:")


def manifests(run: ProgramRun) -> list[Manifest]:
    """Every Kubernetes object the program declared, Secrets included with their values replaced."""
    found = [kubernetes_object(r) for r in run.mocks.resources if is_kubernetes_object(r)]
    return sorted(found, key=lambda m: m.filename)


def secret_to_create(manifest: Manifest) -> SecretToCreate:
    metadata = manifest.body["metadata"]
    keys = sorted({*manifest.body.get("stringData", {}), *manifest.body.get("data", {})})
    return SecretToCreate(metadata.get("namespace", "default"), metadata["name"], tuple(keys))


def cloud_resources(run: ProgramRun) -> list[dict[str, Any]]:
    """Everything else the program declared (the AWS side), for the summary; providers are how, not what."""
    others = [
        r
        for r in run.mocks.resources
        if r.custom and not r.type.startswith(("kubernetes:", "pulumi:providers:"))
    ]
    return [
        {"type": r.type, "name": r.name, "inputs": plain(r.inputs)}
        for r in sorted(others, key=lambda r: (r.type, r.name))
    ]


@dataclass(frozen=True)
class Rendered:
    stack: str
    objects: list[Manifest]  # what manifests/ holds
    secrets: list[SecretToCreate]  # left out; created with their command
    cloud: list[dict[str, Any]]
    pictures: dict[str, str] = dataclasses.field(default_factory=dict)  # file name -> SVG of a GPU's budget

    @property
    def object_paths(self) -> list[str]:
        return [f"{APPLY_DIR}/{m.filename}" for m in self.objects]

    def summary(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "apply": f"kubectl apply -f {APPLY_DIR}/",
            "kubernetes_objects": self.object_paths,
            "secrets_to_create": [
                {"namespace": s.namespace, "name": s.name, "keys": list(s.keys), "command": s.command}
                for s in self.secrets
            ],
            "other_resources": self.cloud,
        }

    def summary_markdown(self) -> str:
        lines = [f"# colo render: stack {self.stack}", "", f"## Kubernetes objects ({len(self.objects)})", ""]
        lines += [f"Apply them all with `kubectl apply -f {APPLY_DIR}/`.", ""]
        lines += [f"- `{path}`" for path in self.object_paths]
        if self.pictures:
            lines += ["", f"## GPU budgets ({len(self.pictures)})", ""]
            lines += [f"![{name.removesuffix('.svg')}]({name})" for name in sorted(self.pictures)]
        if self.secrets:
            lines += ["", f"## Secrets to create ({len(self.secrets)})", ""]
            lines += [
                "Not written (a placeholder applied over the real value would replace it); the pods read "
                "each by name and wait until it exists. Create each once, with the value in the variable:",
                "",
                "```sh",
                *(s.command for s in self.secrets),
                "```",
            ]
        lines += ["", f"## Other resources ({len(self.cloud)})", ""]
        if not self.cloud:
            lines.append("None: this stack declares Kubernetes objects only.")
        for resource in self.cloud:
            lines += [
                f"### {resource['type']} `{resource['name']}`",
                "",
                "```json",
                json.dumps(resource["inputs"], indent=2),
                "```",
                "",
            ]
        return "\n".join(lines).rstrip() + "\n"

    def files(self) -> dict[str, str]:
        """Relative path -> text of everything the output directory holds."""
        files = {f"{APPLY_DIR}/{m.filename}": m.text() for m in self.objects}
        files["summary.json"] = json.dumps(self.summary(), indent=2) + "\n"
        files["summary.md"] = self.summary_markdown()
        return files | self.pictures


def render(run: ProgramRun, stack: str, pictures: Mapping[str, str] | None = None) -> Rendered:
    everything = manifests(run)
    secrets = [secret_to_create(m) for m in everything if m.kind == "Secret"]
    objects = [m for m in everything if m.kind != "Secret"]
    return Rendered(stack, objects, secrets, cloud_resources(run), dict(pictures or {}))


def write_render(
    run: ProgramRun, stack: str, out: Path, pictures: Mapping[str, str] | None = None
) -> Rendered:
    """Replace the render in `out` (a new, empty, or earlier colo render directory) with this one;
    `pictures` (file name -> SVG) sit beside summary.md."""
    rendered = render(run, stack, pictures)
    replace_directory(out, rendered.files())
    return rendered
