"""Added, removed and changed Kubernetes objects between two renders, keyed by kind/namespace/name.

Only field paths are reported, never values: a Secret's data or an env value must not end up in a PR
comment, and the plan section already shows the numbers that matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Manifest = Mapping[str, Any]


@dataclass(frozen=True)
class ObjectChange:
    key: str
    fields: tuple[str, ...]  # changed field paths, e.g. spec.template.spec.containers[name=llm].args[7]


@dataclass(frozen=True)
class ObjectChanges:
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[ObjectChange, ...]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def object_key(manifest: Manifest) -> str:
    """kind/namespace/name; a cluster-scoped object (no namespace) is kind/name."""
    metadata = manifest.get("metadata") or {}
    parts = [str(manifest.get("kind", "?")), metadata.get("namespace"), str(metadata.get("name", "?"))]
    return "/".join(str(p) for p in parts if p)


def keyed(manifests: Iterable[Manifest]) -> dict[str, Manifest]:
    return {object_key(m): m for m in manifests}


def _named(items: list[Any]) -> dict[str, Any] | None:
    """Lists of named things (containers, env, ports, volumes) are matched by name, not by position."""
    if not items or not all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items):
        return None
    names = {i["name"]: i for i in items}
    return names if len(names) == len(items) else None


def changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            child = f"{path}.{key}" if path else str(key)
            out += changed_paths(before.get(key), after.get(key), child)
        return out
    if isinstance(before, list) and isinstance(after, list):
        old, new = _named(before), _named(after)
        if old is not None and new is not None:
            out = []
            for name in sorted(set(old) | set(new)):
                out += changed_paths(old.get(name), new.get(name), f"{path}[name={name}]")
            return out
        out = []
        for index in range(max(len(before), len(after))):
            a = before[index] if index < len(before) else None
            b = after[index] if index < len(after) else None
            out += changed_paths(a, b, f"{path}[{index}]")
        return out
    return [] if before == after else [path or "(whole object)"]


def object_changes(before: Mapping[str, Manifest], after: Mapping[str, Manifest]) -> ObjectChanges:
    """Both sides keyed by object_key. Every list in the result is sorted, so the comment is stable."""
    changed = []
    for key in sorted(set(before) & set(after)):
        paths = changed_paths(before[key], after[key])
        if paths:
            changed.append(ObjectChange(key, tuple(paths)))
    return ObjectChanges(
        added=tuple(sorted(set(after) - set(before))),
        removed=tuple(sorted(set(before) - set(after))),
        changed=tuple(changed),
    )
