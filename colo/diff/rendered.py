"""Kubernetes objects of one side, from the same mock-runtime run `colo render` does.

This is the only place that knows render's API; object_changes only sees dicts keyed by
kind/namespace/name.
"""

from __future__ import annotations

from colo.diff.objects import Manifest, keyed
from colo.mock_run import run_program
from colo.render import manifests
from colo.stackfiles import StackFile


def rendered_objects(stack_file: StackFile) -> dict[str, Manifest]:
    """The side's objects keyed for object_changes (secrets already redacted by render)."""
    return keyed(manifest.body for manifest in manifests(run_program(stack_file)))
