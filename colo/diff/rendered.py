"""Kubernetes objects of one side, taken from `colo render` (the program under Pulumi's mock runtime).

This is the only place that knows render's API; object_changes only sees dicts keyed by
kind/namespace/name. Until the render module exists, the diff says the objects were not compared.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from colo.diff.objects import Manifest, keyed
from colo.stackfiles import StackFile

RENDER_MODULE = "colo.render"
NOT_AVAILABLE = "`colo render` is not part of this build yet"


def rendered_objects(stack_file: StackFile) -> dict[str, Manifest] | str:
    """The side's objects keyed for object_changes, or the reason they cannot be had."""
    try:
        module = importlib.import_module(RENDER_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != RENDER_MODULE:
            raise
        return NOT_AVAILABLE
    manifests: Iterable[Manifest] = module.render_manifests(stack_file)
    return keyed(manifests)
