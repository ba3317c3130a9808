"""The apply-directory check: what `kubectl apply -f DIR/` needs from every file, and nothing else there.

kubectl reads the .yaml, .yml and .json files of a directory (k8s.io/cli-runtime pkg/resource
FileExtensions) and decodes every document in them into an object with apiVersion and kind; any other
file or folder has no place in it. Each object must also pass kubernetes-validate --strict against the
schemas of the Kubernetes release colo targets, or, for the Prometheus operator's kinds (which it has no
schema for), the schema of their CRD (tests/components/crd_schemas). kubectl's own client-side dry run
needs an API server for discovery, so this is the check that runs offline.

`python -m tests.apply_dir DIR...` prints the result for each directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.components.crd_schemas import assert_valid_custom_resource, is_custom_resource

KUBECTL_EXTENSIONS = (".yaml", ".yml", ".json")
KUBERNETES_VERSION = "1.34.0"


def _kubernetes_validate() -> str:
    return str(Path(sys.executable).with_name("kubernetes-validate"))


# libyaml's safe loader where PyYAML has it (every PyPI wheel does): the same documents, a fraction of the time
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=_LOADER) if doc is not None]


def _file_problems(path: Path, name: str) -> list[str]:
    if path.is_symlink() or not path.is_file():
        return [f"{name}: not a plain file"]
    if path.suffix not in KUBECTL_EXTENSIONS:
        return [f"{name}: kubectl skips or cannot read a {path.suffix or 'extension-less'} file"]
    try:
        documents = _documents(path)
    except yaml.YAMLError as exc:
        return [f"{name}: not YAML or JSON: {exc}"]
    if not documents:
        return [f"{name}: holds no object"]
    return [
        f"{name}: document {i} is not an object with apiVersion and kind"
        for i, doc in enumerate(documents)
        if not (isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"))
    ]


def apply_directory_problems(directory: Path) -> list[str]:
    """Every reason `kubectl apply -f directory/` would fail or apply something it should not."""
    return apply_directories_problems([directory])


def apply_directories_problems(directories: list[Path]) -> list[str]:
    """apply_directory_problems of each directory, with one kubernetes-validate run for all of them."""
    problems: list[str] = []
    built_in: list[str] = []
    for directory in directories:
        entries = sorted(directory.iterdir())
        if not entries:
            problems.append(f"{directory}: empty")
            continue
        unreadable = [p for entry in entries for p in _file_problems(entry, entry.name)]
        if unreadable:
            problems += unreadable
            continue
        custom = [e for e in entries if any(is_custom_resource(doc) for doc in _documents(e))]
        for entry in custom:
            for doc in _documents(entry):
                try:
                    assert_valid_custom_resource(doc)
                except jsonschema.ValidationError as exc:
                    problems.append(f"{entry.name}: its CRD's schema refuses it: {exc.message}")
        built_in += [str(e) for e in entries if e not in custom]
    if not built_in:
        return problems
    result = subprocess.run(
        [_kubernetes_validate(), "--strict", "--quiet", "-k", KUBERNETES_VERSION, *built_in],
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 or "Couldn't find schema" in output:
        problems.append(f"kubernetes-validate: {output}")
    return problems


def objects_in(directory: Path) -> list[dict[str, Any]]:
    return [doc for path in sorted(directory.iterdir()) for doc in _documents(path)]


def report(directory: Path) -> str:
    problems = apply_directory_problems(directory)
    files = sorted(directory.iterdir())
    kinds: dict[str, int] = {}
    for body in objects_in(directory) if not problems else []:
        kinds[body["kind"]] = kinds.get(body["kind"], 0) + 1
    if problems:
        return f"{directory}: FAILS\n" + "\n".join(f"  - {p}" for p in problems)
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return (
        f"{directory}: {len(files)} files, every one a kubectl-readable object that passes "
        f"kubernetes-validate --strict ({KUBERNETES_VERSION}) or its CRD's schema, nothing else there: {counted}"
    )


if __name__ == "__main__":
    print("\n".join(report(Path(arg)) for arg in sys.argv[1:]))
