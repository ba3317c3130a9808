"""Kubernetes objects read back from a directory, and how one render's objects hold against another's.

Any YAML file under the directory counts, in any sub-directory (the provider writes into 1-manifest/), and
any document in it that has apiVersion, kind and metadata.name; whatever else lies there (summaries) is not
an object and is left out. Objects are keyed kind/namespace/name, as `colo diff` keys them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from colo.diff.objects import Manifest, changed_paths, object_key


def is_kubernetes_object(document: Any) -> bool:
    return (
        isinstance(document, Mapping)
        and isinstance(document.get("apiVersion"), str)
        and isinstance(document.get("kind"), str)
        and isinstance((document.get("metadata") or {}).get("name"), str)
    )


def objects_in(directory: Path) -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for path in sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")]):
        for document in yaml.safe_load_all(path.read_text()):
            if is_kubernetes_object(document):
                found[object_key(document)] = document
    return found


def restricted_to(shape: Any, value: Any) -> Any:
    """`value` cut down to the fields `shape` has; list items past `shape`'s length are kept, so a
    different length still shows."""
    if isinstance(shape, Mapping) and isinstance(value, Mapping):
        return {key: restricted_to(shape[key], value[key]) for key in shape if key in value}
    if isinstance(shape, list) and isinstance(value, list):
        return [restricted_to(s, v) for s, v in zip(shape, value, strict=False)] + value[len(shape) :]
    return value


def fields_that_differ(ours: Manifest, theirs: Manifest) -> list[str]:
    """Paths of every field `ours` sets that `theirs` lacks or holds with another value."""
    return changed_paths(ours, restricted_to(ours, theirs))


def fields_added(ours: Manifest, theirs: Manifest) -> list[str]:
    """Paths of fields only `theirs` has (defaults or annotations another renderer adds)."""
    return changed_paths(restricted_to(ours, theirs), theirs)
